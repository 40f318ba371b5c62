// A standalone C++ driver of nqprof's queue kernels (no Python, no PyCUDA): the queue
// correctness tests, the queue microbenchmark, and the queue strategy beside the host-seeded
// kernel, all from the kernels/ sources compiled into one binary. docs/results/queue-h200.md
// was measured with it (tools/queue_harness.sh builds and runs it).
//
//   queue_harness tests                      correctness of every queue and element size
//   queue_harness bench REPS MAX_THREADS     the microbenchmark (BENCH lines)
//   queue_harness solve Q NLO NHI REPS DEPTH BLOCK BPS THRESHOLD SPLIT_ROWS LOG2_CAPACITY
//                                            the strategy (Q: 0 bq, 1 bwd; BPS 0: occupancy)
//   queue_harness fein N REPS                the host-seeded kernel (depth 6, block 64)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <string>
#include <chrono>
#include "queue_bench.cu"
#include "queue.cu"
#include "feinbube.cu"

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA error %s at %s:%d: %s\n", #x, __FILE__, __LINE__, cudaGetErrorString(e_)); exit(3); } } while (0)

static const unsigned long long KNOWN[] = {1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596, 2279184,
    14772512, 95815104, 666090624ull, 4968057848ull, 39029188884ull, 314666222712ull, 2691008701644ull};
static int g_sms = 0;
static int g_fail = 0;

// ---------------- queue kernels by name ----------------
typedef void (*InitK)(unsigned char*, unsigned);
typedef void (*RunK)(unsigned char*, unsigned, unsigned, unsigned, unsigned long long*, unsigned*, int);
typedef void (*EnqK)(unsigned char*, unsigned, unsigned, unsigned long long*);
typedef void (*DeqK)(unsigned char*, unsigned, unsigned, unsigned, unsigned long long*, unsigned*);
struct QK { const char* name; int bytes; InitK init; RunK bal, unbal; EnqK enq; DeqK deq; };
#define QKE(q, b) {#q, b, qb_init_##q##_##b, qb_balanced_##q##_##b, qb_unbalanced_##q##_##b, qb_enqueue_only_##q##_##b, qb_dequeue_only_##q##_##b}
static QK QKS[] = {QKE(bq, 4), QKE(bq, 8), QKE(bq, 16), QKE(bwd, 4), QKE(bwd, 8), QKE(bwd, 16),
                   QKE(gottlieb, 4), QKE(gottlieb, 8), QKE(gottlieb, 16), QKE(ring, 4), QKE(ring, 8), QKE(ring, 16)};

struct Dev {
    unsigned char* mem = nullptr; size_t mem_bytes = 0;
    unsigned long long* stats = nullptr; unsigned* seen = nullptr; size_t seen_n = 0;
    void ensure(size_t qb, size_t ids) {
        if (qb > mem_bytes) { if (mem) CK(cudaFree(mem)); CK(cudaMalloc(&mem, qb)); mem_bytes = qb; }
        if (!stats) CK(cudaMalloc(&stats, 8 * QB_WORDS));
        if (ids > seen_n) { if (seen) CK(cudaFree(seen)); CK(cudaMalloc(&seen, 4 * ids)); seen_n = ids; }
    }
} D;

static void reset_queue(const QK& k, unsigned cap) {
    size_t qb = nqq::queue_bytes(cap, k.bytes);
    CK(cudaMemset(D.mem, 0, qb));
    k.init<<<std::min(1024u, (cap + 255) / 256), 256>>>(D.mem, cap);
    CK(cudaMemset(D.stats, 0, 8 * QB_WORDS));
    CK(cudaGetLastError());
}
static void read_stats(unsigned long long* s) { CK(cudaDeviceSynchronize()); CK(cudaMemcpy(s, D.stats, 8 * QB_WORDS, cudaMemcpyDeviceToHost)); }

static void expect(bool ok, const char* what, const QK& k, const char* detail) {
    printf("%s %-32s %-9s %2dB %s\n", ok ? "PASS" : "FAIL", what, k.name, k.bytes, detail);
    if (!ok) g_fail++;
}

static bool seen_exactly_once(unsigned n, unsigned long long* ones_out = nullptr) {
    std::vector<unsigned> h(n);
    CK(cudaMemcpy(h.data(), D.seen, 4ull * n, cudaMemcpyDeviceToHost));
    unsigned long long bad = 0, ones = 0;
    for (unsigned i = 0; i < n; ++i) { if (h[i] == 1) ones++; else if (h[i] != 0) bad++; }
    if (ones_out) *ones_out = ones;
    return bad == 0 && (ones_out || ones == n);
}

static int resident_threads(const void* fn, int block) {
    int nb = 0; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, fn, block, 0));
    return nb * block * g_sms;
}

static void tests() {
    char d[512];
    for (auto& k : QKS) {
        unsigned long long s[QB_WORDS], s2[QB_WORDS];
        // full: 3000 threads enqueue once into 1024 slots
        unsigned cap = 1024, T = 3000;
        D.ensure(nqq::queue_bytes(1 << 21, 16), 40u << 20);
        reset_queue(k, cap);
        k.enq<<<(T + 127) / 128, 128>>>(D.mem, cap, T, D.stats); read_stats(s);
        snprintf(d, sizeof d, "ok=%llu full=%llu stuck=%llu", s[QB_ENQ_OK], s[QB_FULL], s[QB_STUCK]);
        expect(s[QB_ENQ_OK] == cap && s[QB_FULL] == T - cap && s[QB_STUCK] == 0, "full only when full", k, d);
        unsigned long long enq_sum = s[QB_ID_SUM];
        CK(cudaMemset(D.seen, 0, 4 * T)); CK(cudaMemset(D.stats, 0, 8 * QB_WORDS));
        k.deq<<<(T + 127) / 128, 128>>>(D.mem, cap, T, T, D.stats, D.seen); read_stats(s2);
        unsigned long long ones = 0; bool once = seen_exactly_once(T, &ones);
        snprintf(d, sizeof d, "ok=%llu empty=%llu ids_once=%llu sum=%llu/%llu corrupt=%llu", s2[QB_DEQ_OK], s2[QB_EMPTY], ones, s2[QB_ID_SUM], enq_sum, s2[QB_CORRUPT]);
        expect(once && ones == cap && s2[QB_DEQ_OK] == cap && s2[QB_EMPTY] == T - cap && s2[QB_ID_SUM] == enq_sum && !s2[QB_CORRUPT] && !s2[QB_STUCK], "drain: exactly once, empty when empty", k, d);
        // balanced, capacity >= threads: BQ must never report full or empty
        for (int variant = 0; variant < 3; ++variant) {
            unsigned iters = 10, threads, c;
            const char* what;
            if (variant == 0) { threads = 100000; c = 1 << 17; what = "balanced 100K, cap 128K"; }
            else if (variant == 1) { threads = 50000; c = 1024; what = "balanced 50K, cap 1K"; }
            else { threads = std::min(resident_threads((const void*)k.unbal, 128), 65536) / 64 * 64; c = 256; what = "unbalanced resident, cap 256"; }
            reset_queue(k, c);
            CK(cudaMemset(D.seen, 0, 4ull * threads * iters));
            RunK fn = variant == 2 ? k.unbal : k.bal;
            auto t0 = std::chrono::steady_clock::now();
            fn<<<(threads + 127) / 128, 128>>>(D.mem, c, threads, iters, D.stats, D.seen, 1);
            read_stats(s);
            double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            unsigned long long total = (unsigned long long)threads * iters;
            unsigned long long expect_ops = variant == 2 ? total / 2 : total;
            unsigned long long ones = 0; bool once = seen_exactly_once(threads * iters, &ones);
            unsigned long long want_sum = 0;
            if (variant == 2) { for (unsigned t = 0; t < threads; ++t) if (((t >> 5) & 1) == 0) for (unsigned i = 0; i < iters; ++i) want_sum += t * iters + i; }
            else want_sum = total * (total - 1) / 2;
            snprintf(d, sizeof d, "threads=%u enq=%llu deq=%llu once=%llu full=%llu empty=%llu stuck=%llu gave_up=%llu corrupt=%llu sumok=%d %.1fms",
                     threads, s[QB_ENQ_OK], s[QB_DEQ_OK], ones, s[QB_FULL], s[QB_EMPTY], s[QB_STUCK], s[QB_GAVE_UP], s[QB_CORRUPT], s[QB_ID_SUM] == want_sum, ms);
            bool ok = once && ones == expect_ops && s[QB_ENQ_OK] == expect_ops && s[QB_DEQ_OK] == expect_ops && !s[QB_STUCK] && !s[QB_GAVE_UP] && !s[QB_CORRUPT] && s[QB_ID_SUM] == want_sum;
            if (variant == 0 && !strcmp(k.name, "bq")) ok = ok && s[QB_FULL] == 0 && s[QB_EMPTY] == 0;
            expect(ok, what, k, d);
        }
    }
}

static float time_kernel(const QK& k, bool unbal, unsigned cap, unsigned threads, unsigned iters, int reps, unsigned long long* s) {
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    std::vector<float> ts;
    for (int r = 0; r < reps + 1; ++r) {
        reset_queue(k, cap);
        CK(cudaEventRecord(a));
        (unbal ? k.unbal : k.bal)<<<(threads + 127) / 128, 128>>>(D.mem, cap, threads, iters, D.stats, D.seen, 0);
        CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b)); CK(cudaGetLastError());
        float ms; CK(cudaEventElapsedTime(&ms, a, b));
        if (r) ts.push_back(ms);
        read_stats(s);
        if (s[QB_STUCK] || s[QB_GAVE_UP]) { printf("bench %s %d stuck=%llu gave_up=%llu\n", k.name, k.bytes, s[QB_STUCK], s[QB_GAVE_UP]); g_fail++; }
        if (ms > 3000) break;
    }
    std::sort(ts.begin(), ts.end());
    return ts.empty() ? -1 : ts[ts.size() / 2];
}

static void bench(int reps, unsigned maxT) {
    D.ensure(nqq::queue_bytes(1 << 21, 16), 16);
    printf("BENCH variant queue bytes threads capacity ms ns_per_op full empty\n");
    unsigned long long s[QB_WORDS];
    for (auto& k : QKS) {
        for (unsigned T = 1024; T <= maxT; T *= 2) {
            unsigned cap = 1u << 21;
            float ms = time_kernel(k, false, cap, T, 10, reps, s);
            printf("BENCH balanced %s %d %u %u %.4f %.3f %llu %llu\n", k.name, k.bytes, T, cap, ms, ms * 1e6 / (T * 20.0), s[QB_FULL], s[QB_EMPTY]);
            fflush(stdout);
            if (ms > 1500 || (!strcmp(k.name, "ring") && T >= 16384)) break;
        }
        unsigned R = std::min(resident_threads((const void*)k.unbal, 128), 1 << 20) / 64 * 64;
        for (unsigned T = 1024; T <= R; T *= 2) {
            unsigned cap = 1024;
            float ms = time_kernel(k, true, cap, T, 10, reps, s);
            printf("BENCH unbalanced %s %d %u %u %.4f %.3f %llu %llu\n", k.name, k.bytes, T, cap, ms, ms * 1e6 / (T * 10.0), s[QB_FULL], s[QB_EMPTY]);
            fflush(stdout);
            if (T * 2 > R && T != R) T = R / 2;  // end on the resident count
            if (ms > 1500 || (!strcmp(k.name, "ring") && T >= 16384)) break;
        }
    }
}

// ---------------- N-Queens ----------------
struct Boards { std::vector<unsigned> c, l, r; std::vector<unsigned char> row; };
static void expand_rec(int n, int depth, unsigned c, unsigned l, unsigned r, int row, unsigned allowed, Boards& B) {
    unsigned full = (1u << n) - 1;
    if (row >= depth) { B.c.push_back(c); B.l.push_back(l); B.r.push_back(r); B.row.push_back(row); return; }
    unsigned f = ~(c | l | r) & full & allowed;
    while (f) { unsigned b = f & -f; f ^= b; expand_rec(n, depth, c | b, ((l | b) << 1) & full, (r | b) >> 1, row + 1, full, B); }
}
static Boards expand(int n, int depth) {
    Boards B; unsigned full = (1u << n) - 1; int half = n / 2;
    for (int col = 0; col < half; ++col) { unsigned b = 1u << col; expand_rec(n, depth, b, (b << 1) & full, b >> 1, 1, full, B); }
    if (n % 2) {
        unsigned b = 1u << half; unsigned c = b, l = (b << 1) & full, r = b >> 1;
        unsigned f = ~(c | l | r) & full & ((1u << half) - 1);
        while (f) { unsigned bb = f & -f; f ^= bb; expand_rec(n, std::max(depth, 2), c | bb, ((l | bb) << 1) & full, (r | bb) >> 1, 2, full, B); }
    }
    return B;
}

struct QParams { int queue = 0; int depth = 5; int block = 128; int bps = 0; int threshold = 4096; int split_rows = 6; int cap_log2 = 21; };

static double solve_queue(int n, QParams p, int reps, bool quiet = false) {
    Boards B = expand(n, std::min(p.depth, n - 1));
    unsigned nb = B.c.size(); int min_row = 99; for (auto r : B.row) min_row = std::min(min_row, (int)r);
    unsigned cap = 1u << p.cap_log2;
    if (nb > cap) { printf("SOLVE skip: %u boards > capacity %u\n", nb, cap); return -1; }
    int levels = std::max(1, n - min_row);
    size_t smem = 16ull * levels * p.block;
    auto fn = p.queue == 0 ? queue_search_bq : queue_search_bwd;
    CK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)std::max<size_t>(smem, 1)));
    int occ = 0; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, fn, p.block, smem));
    int bps = p.bps ? std::min(p.bps, occ) : occ;
    if (bps < 1) { printf("SOLVE skip: occupancy 0\n"); return -1; }
    int grid = bps * g_sms;
    unsigned *dc, *dl, *dr; unsigned char* drow; unsigned char* qmem; unsigned long long* acct;
    size_t qbytes = nqq::queue_bytes(cap, 16);
    CK(cudaMalloc(&dc, 4ull * std::max(nb, 1u))); CK(cudaMalloc(&dl, 4ull * std::max(nb, 1u))); CK(cudaMalloc(&dr, 4ull * std::max(nb, 1u))); CK(cudaMalloc(&drow, std::max(nb, 1u)));
    CK(cudaMemcpy(dc, B.c.data(), 4ull * nb, cudaMemcpyHostToDevice)); CK(cudaMemcpy(dl, B.l.data(), 4ull * nb, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dr, B.r.data(), 4ull * nb, cudaMemcpyHostToDevice)); CK(cudaMemcpy(drow, B.row.data(), nb, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&qmem, qbytes)); CK(cudaMalloc(&acct, 8 * QA_WORDS));
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    std::vector<float> ts; unsigned long long h[QA_WORDS]; bool ok_all = true;
    for (int r = 0; r < reps; ++r) {
        CK(cudaMemset(qmem, 0, qbytes)); CK(cudaMemset(acct, 0, 8 * QA_WORDS));
        CK(cudaEventRecord(a));
        queue_seed<<<std::max(1u, std::min((nb + 255) / 256, 4096u)), 256>>>(qmem, cap, dc, dl, dr, drow, nb, acct);
        fn<<<grid, p.block, smem>>>(qmem, cap, n, levels, p.threshold, p.split_rows, acct);
        CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b)); CK(cudaGetLastError());
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); ts.push_back(ms);
        CK(cudaMemcpy(h, acct, 8 * QA_WORDS, cudaMemcpyDeviceToHost));
        unsigned long long count = 2 * h[QA_SOLUTIONS];
        bool ok = count == KNOWN[n] && !h[QA_STUCK] && !h[QA_ABORT] && h[QA_PENDING] == 0 && h[QA_DEQUEUED] == h[QA_SEEDED] + h[QA_ENQUEUED];
        ok_all &= ok;
        if (!quiet || !ok || r == reps - 1)
            printf("SOLVE %s N=%d %s count=%llu depth=%d block=%d bps=%d grid=%d thr=%d split_rows=%d cap=2^%d boards=%u ms=%.3f deq=%llu enq=%llu splits=%llu full=%llu empty=%llu busy=%llu stuck=%llu pending=%llu\n",
                   p.queue ? "bwd" : "bq", n, ok ? "OK" : "WRONG", count, p.depth, p.block, bps, grid, p.threshold, p.split_rows, p.cap_log2, nb, ms,
                   h[QA_DEQUEUED], h[QA_ENQUEUED], h[QA_SPLITS], h[QA_FULL], h[QA_EMPTY], h[QA_BUSY], h[QA_STUCK], h[QA_PENDING]);
        if (!ok) { g_fail++; break; }
    }
    cudaFree(dc); cudaFree(dl); cudaFree(dr); cudaFree(drow); cudaFree(qmem); cudaFree(acct);
    std::sort(ts.begin(), ts.end());
    double med = ts[ts.size() / 2];
    printf("TIME %s N=%d depth=%d block=%d bps=%d thr=%d split_rows=%d median_ms=%.3f of %d %s\n", p.queue ? "bwd" : "bq", n, p.depth, p.block, bps, p.threshold, p.split_rows, med, (int)ts.size(), ok_all ? "verified" : "FAILED");
    fflush(stdout);
    return med;
}

static double solve_feinbube(int n, int depth, int block, int reps) {
    Boards B = expand(n, depth); unsigned nb = B.c.size(); int min_row = 99; for (auto r : B.row) min_row = std::min(min_row, (int)r);
    int levels = n - min_row; size_t smem = 16ull * levels * block;
    CK(cudaFuncSetAttribute(feinbube_dynamic, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    unsigned *dc, *dl, *dr; unsigned char* drow; unsigned long long* tot;
    CK(cudaMalloc(&dc, 4ull * nb)); CK(cudaMalloc(&dl, 4ull * nb)); CK(cudaMalloc(&dr, 4ull * nb)); CK(cudaMalloc(&drow, nb)); CK(cudaMalloc(&tot, 8));
    CK(cudaMemcpy(dc, B.c.data(), 4ull * nb, cudaMemcpyHostToDevice)); CK(cudaMemcpy(dl, B.l.data(), 4ull * nb, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dr, B.r.data(), 4ull * nb, cudaMemcpyHostToDevice)); CK(cudaMemcpy(drow, B.row.data(), nb, cudaMemcpyHostToDevice));
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b)); std::vector<float> ts; unsigned long long h = 0;
    for (int r = 0; r < reps; ++r) {
        CK(cudaMemset(tot, 0, 8)); CK(cudaEventRecord(a));
        feinbube_dynamic<<<(nb + block - 1) / block, block, smem>>>(dc, dl, dr, drow, nb, n, levels, tot);
        CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b)); CK(cudaGetLastError());
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); ts.push_back(ms); CK(cudaMemcpy(&h, tot, 8, cudaMemcpyDeviceToHost));
    }
    std::sort(ts.begin(), ts.end());
    bool ok = 2 * h == KNOWN[n]; if (!ok) g_fail++;
    printf("TIME feinbube N=%d depth=%d block=%d boards=%u median_ms=%.3f of %d %s\n", n, depth, block, nb, ts[ts.size() / 2], reps, ok ? "verified" : "FAILED");
    fflush(stdout);
    cudaFree(dc); cudaFree(dl); cudaFree(dr); cudaFree(drow); cudaFree(tot);
    return ts[ts.size() / 2];
}

int main(int argc, char** argv) {
    cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0)); g_sms = prop.multiProcessorCount;
    printf("DEVICE %s sm_%d%d SMs=%d\n", prop.name, prop.major, prop.minor, g_sms);
    // args: a sequence of commands
    for (int i = 1; i < argc; ++i) {
        std::string cmd = argv[i];
        if (cmd == "tests") tests();
        else if (cmd == "bench") { int reps = atoi(argv[++i]); unsigned maxT = atoi(argv[++i]); bench(reps, maxT); }
        else if (cmd == "fein") { int n = atoi(argv[++i]); int reps = atoi(argv[++i]); solve_feinbube(n, std::min(6, n - 1), 64, reps); }
        else if (cmd == "solve") {
            // solve Q NLO NHI reps depth block bps threshold split_rows caplog2
            QParams p; p.queue = atoi(argv[++i]); int lo = atoi(argv[++i]), hi = atoi(argv[++i]); int reps = atoi(argv[++i]);
            p.depth = atoi(argv[++i]); p.block = atoi(argv[++i]); p.bps = atoi(argv[++i]); p.threshold = atoi(argv[++i]);
            p.split_rows = atoi(argv[++i]); p.cap_log2 = atoi(argv[++i]);
            for (int n = lo; n <= hi; ++n) { QParams q = p; q.depth = std::max(1, std::min(p.depth, n - 2)); q.split_rows = std::min(p.split_rows, std::max(1, n - 4)); solve_queue(n, q, reps, true); }
        }
    }
    printf("DONE failures=%d\n", g_fail);
    return g_fail ? 1 : 0;
}
