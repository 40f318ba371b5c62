// Standalone harness for kernels/fast.cu: host expansion (cpu/d4.c), kernel variants,
// CUDA-event timing (warm-up, median), verification against the known counts.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <chrono>
#include "fast.cu"

static const unsigned long long KNOWN[] = {0ULL, 1ULL, 0ULL, 0ULL, 2ULL, 10ULL, 4ULL, 40ULL, 92ULL, 352ULL, 724ULL,
    2680ULL, 14200ULL, 73712ULL, 365596ULL, 2279184ULL, 14772512ULL, 95815104ULL, 666090624ULL, 4968057848ULL,
    39029188884ULL, 314666222712ULL, 2691008701644ULL, 24233937684440ULL};

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "CUDA %s at %s:%d: %s\n", #x, __FILE__, __LINE__, cudaGetErrorString(e_)); exit(2); } } while (0)

typedef void (*kern_t)(const uint4*, unsigned, int, int, unsigned*, unsigned long long*);

int main(int argc, char** argv) {
    int n = 17, depth = 6, reps = 3, warm = 1, bps = 0;
    const char* kname = "dynamic";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n")) n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-d")) depth = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r")) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-w")) warm = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-k")) kname = argv[++i];
        else if (!strcmp(argv[i], "-B")) bps = atoi(argv[++i]);
    }
    struct { const char* name; kern_t k; } table[] = {{"static", fast_static}, {"dynamic", fast_dynamic},
        {"pop", fast_dynamic_pop}, {"tight", fast_tight}, {"tight_u1", fast_tight_u1}, {"tight_u4", fast_tight_u4},
        {"tight_nola", fast_tight_nola}};
    kern_t k = nullptr;
    for (auto& e : table) if (!strcmp(e.name, kname)) k = e.k;
    if (!k) { fprintf(stderr, "unknown kernel %s\n", kname); return 2; }
    auto h0 = std::chrono::steady_clock::now();
    size_t nt = nq_d4_expand(n, depth, nullptr, 0);
    std::vector<nq_d4_task> tasks(nt);
    nq_d4_expand(n, depth, tasks.data(), nt);
    double exp_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - h0).count();
    int levels = std::max(1, n - 2 - depth);
    size_t shmem = (size_t)3 * levels * NQ_BLOCK * 4;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shmem));
    int occ = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, NQ_BLOCK, shmem));
    if (bps <= 0 || bps > occ) bps = occ;
    int grid = prop.multiProcessorCount * bps;
    uint4* d_tasks; unsigned* d_next; unsigned long long* d_out;
    CK(cudaMalloc(&d_tasks, std::max<size_t>(1, nt) * 32));
    CK(cudaMemcpy(d_tasks, tasks.data(), nt * 32, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&d_next, 4));
    CK(cudaMalloc(&d_out, 16));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    std::vector<float> ms;
    unsigned long long res[2] = {0, 0};
    bool ok = true;
    for (int r = 0; r < warm + reps; r++) {
        CK(cudaMemset(d_next, 0, 4));
        CK(cudaMemset(d_out, 0, 16));
        CK(cudaEventRecord(e0));
        k<<<grid, NQ_BLOCK, shmem>>>(d_tasks, (unsigned)nt, n, levels, d_next, d_out);
        CK(cudaGetLastError());
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        CK(cudaGetLastError());
        float t; CK(cudaEventElapsedTime(&t, e0, e1));
        CK(cudaMemcpy(res, d_out, 16, cudaMemcpyDeviceToHost));
        if (res[0] != KNOWN[n]) { ok = false; fprintf(stderr, "MISMATCH N=%d got %llu want %llu\n", n, res[0], KNOWN[n]); }
        if (r >= warm) ms.push_back(t);
    }
    std::vector<float> s = ms; std::sort(s.begin(), s.end());
    float med = s.empty() ? 0 : s[s.size() / 2];
    printf("RESULT kernel=%s block=%d N=%d depth=%d tasks=%zu grid=%d(%d/SM) count=%llu %s median_ms=%.3f times=",
           kname, NQ_BLOCK, n, depth, nt, grid, bps, res[0], ok ? "VERIFIED" : "WRONG", med);
    for (float t : ms) printf("%.3f,", t);
    printf(" expand_s=%.3f", exp_s);
    if (NQ_COUNT_NODES && med > 0) printf(" nodes=%llu nodes_per_s=%.3e", res[1], res[1] / (med * 1e-3));
    printf("\n");
    return ok ? 0 : 1;
}
