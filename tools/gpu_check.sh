#!/usr/bin/env bash
# Build nqprof on a GPU host and run the named stages, each under a timeout, logging to
# $OUT (default ./out). Used to produce the GPU results under docs/results.
#
#   tools/gpu_check.sh env tests feinbube-tune cpu bench profile
#
# Stages:
#   env            nqprof env
#   live           the live smoke of every GPU command (tests/test_live_smoke_gpu.py), nsys required
#   live-old       its trace tests against an earlier tree (.stage/main38, e.g. `git archive COMMIT`): what
#                  the smoke finds there
#   profiler-env   the variables Nsight Systems, Nsight Compute and compute-sanitizer set in what they run
#   graph-limits   characterize launch's graph modes at and one past device graph launch's limits
#                  (120 fire-and-forget, 255 tail), --beyond-limits, each point under a 30 s watchdog
#   graph-tail-probe  graph-tail at 1, 2, 4, 32 launches, each under a 15 s watchdog (where does it hang?)
#   trace-all      pytest bench/ --nq-n=12 --nq-trace twice (every strategy of the default suite), then nqprof
#                  compare --traces of the two and a breakdown; the saved JSON in $OUT/trace-all.tar.gz
#   solve20        whole-process nqprof solve 20 -s fast -r 1 -w 0, this tree and $OLD_TREE interleaved,
#                  $SOLVE20_RUNS (3) each, the medians of runs 2 on, and one cProfile of each
#   oldnew-cases   pytest bench/ of $OLDNEW_STRATEGIES at $OLDNEW_N (default cdp-bp at 8:9), this tree and
#                  .stage/main38 interleaved, 3 each (after solve20, which installs the old tree); the runs in
#                  $OUT/oldnew.tar.gz, then nqprof compare of each old run against the new run after it
#                  (needs /tmp/nqprof-site: run env first)
#   launch-default `nqprof characterize launch` with its defaults, timed (issue 49: within 10 minutes)
#   tests-spares   tests/test_cdp_gpu.py and test_queue_gpu.py under each spare policy (NQPROF_TEST_SPARES: context,
#                  init:2, init:3, or $SPARE_POLICIES), timed: the fastest is kept for tests-best
#   tests-best     the GPU tests under the policy tests-spares found fastest, slowest 45 listed
#   devgraph-nsys  devgraph and graph-cst at N=12 under nsys with each --cuda-graph-trace (default, graph, node):
#                  the export's kernel, graph, copy and NVTX tables' rows, and nqprof trace breakdown
#   instr-check    Valgrind (from a deb in .gpuhost/deb) counts serial N=12's instructions
#   suite-seq      the default pytest bench/ of this tree (new) and $OLD_TREE (old, default .stage/main38) in the order $SUITE_SEQ
#                  (default: old new old), each timed; a new run after an earlier one saved is gated against it
#                  (--benchmark-compare-fail=median:5%, --nq-compare-fail=slower,faster); histories in $OUT/seq.tar.gz,
#                  continued from .stage/seq (unpack it there) on a fresh host
#   ab-moved       the A/B of a moved default over the default suite: pytest bench/ of this tree saved as run 1, then
#                  of a copy with one default moved (default: cdp-bp's host rows rows_default(5, 3) -> rows_default(4, 3);
#                  MOVE_FILE, MOVE_FROM, MOVE_TO) gated against it (--benchmark-compare-fail=median:5% and
#                  --nq-compare-fail=slower,faster; its exit says whether a gate failed), then nqprof compare 0001 0002; $AB_ARGS: more pytest arguments for both runs (--nq-strategy=...)
#   ab-trials      the interleaved A/B's trials (tools/ab_trials.py --trials 10): serial N=11 made 5% slower, and an A/A
#   instr-aa       the CPU cases of the suite with --nq-cpu-metric=instructions twice, the second gated against the
#                  first, then nqprof compare of the two
#   trace-dg       devgraph, graph-cst and fast at N=12 with --nq-trace twice, compare --traces, a devgraph breakdown
#   fork-warn      the CPU cases of pytest bench/ at small N with DeprecationWarnings shown: how many fork ones
#   offsets        where a small GPU case's time depends on its worker process: fresh `nqprof solve`s of fast and
#                  devgraph (tools/offset_probe.py), then pytest bench/ of them at N=8..11 twice under each
#                  \$OFFSET_VARIANTS (tools/offset_variants.py: default nospare nowatch four), per-process medians
#   offsets-reopen K sessions of small fast and devgraph cases opened one after another in one process, beside K
#                  fresh processes: does a new session (its own context) draw a new offset as a process does?
#   blocks         nqprof characterize blocks at N=17..19 (the counting grid's per-block records, launched from the
#                  host, by a device graph and by CDP2): JSON, Markdown table and the N=19 figure in $OUT
#   blocks-bounds  cdp-cst's counting grid launched by CDP2 and by the host at N=19 with each min_blocks (the counting
#                  kernels' __launch_bounds__ minimum blocks an SM: $BOUNDS, default 0 2 4 6 8), then block=768
#                  (host, cdp-tail, cdp-host): does a device-launched grid's blocks per SM follow the declared bound?
#   cdp-bounds     the fix: characterize blocks at N=19 with cdp-cst's counting kernels bounded by threads only and
#                  with none; cdp-cst against fast at N=19..21 (tools/cdp_cst_table.py, 3 interleaved runs each); the
#                  GPU tests of cdp-cst and graph-cst
#   cdp-final      cdp-cst against fast at N=19..21 (3 interleaved whole runs each), characterize blocks at N=17..19
#                  (every path, the N=19 figure) and characterize latency (every path, 200 trials)
#   latency        characterize latency alone (every path, 200 trials), and blocks at N=19
#   build          nqprof build (every kernel of the catalog into the kernel cache, as a first run leaves it)
#   dg-aa          devgraph and fast at N=8..13 twice (pytest bench/), then nqprof compare of the two and the
#                  per-process medians of both (tools/offset_probe.py): does a case's time still move with its process?
#   tests-some     the GPU tests that \$TESTS_K selects (pytest -k) in \$TESTS_FILES (default: tests)
#   tests          the GPU-marked tests (pytest -m gpu --require-gpu: a missing GPU fails them), slowest 15 listed
#   cst-variants   fast's constellation kernel at N=16..20, then block x unroll at N=19
#   cst-mix        the constellation kernel's SASS opcodes per step (tools/sass_mix.py; CST_MIX: more builds)
#   cst-ncu        ncu on the constellation kernel at N=17: instructions, lanes, occupancy, issue slots, pipes
#                  (each build of \$K37_VARIANTS if set)
#   fast23b        fast N=1..19 verified, N=16..21 timed; CPU: serial-d4 vs serial, multicore vs the mirror pool
#   cst-sass       the constellation kernel's SASS and ncu's per-instruction execution counts and stall reasons
#                  at N=16 ($OUT/sass)
#   fast-vs        fast beside the suite's GPU strategies within 10x of it (bp-dfs, feinbube, queue, cdp-bp,
#                  devgraph) at N=10..18 in one run: is fast the fastest?
#   fast-check     compute-sanitizer memcheck on fast at small N; depth 3..5 at N=19, 20
#   cpu-cst        CPU: serial vs serial-d4 at N=16, the mirror pool vs multicore at N=17 (bench/cst_cpu.py)
#   fast22         fast N=22, one round
#   smoke          nqprof env, then one solve of several strategies (fast, dp2, feinbube, devgraph, queue, cdp-bp, serial)
#   fast22-whole   the whole process of fast N=22, one round
#   interrupt      Ctrl-C 3 s into a GPU run (exit, time, what is left on the GPU), then kill -9 of the parent
#   shared         fast N=18 while another nqprof counts N=21 on the GPU (the warning, the record), then alone
#   shared-compare `pytest bench/` of fast N=16..18 alone, then again while another nqprof counts N=22 on the
#                  GPU (pytest's summary), then `nqprof compare` of the two saved runs (its warning)
#   solve-quick    whole-process time of fast at N=12 (three runs), 16 and 20 (two), with the worker's start
#   solve-times    whole-process time (the shell's) of `nqprof solve N -s fast -r 1 -w 0`, N=12..21, three runs each
#   bench-time     the default `pytest bench/`, timed, with every case's duration (its history: bench-time.tar.gz)
#   cst-whole      whole-process time of fast, graph-cst and cdp-cst at N=20, 21 (one round), then graph-cst's and
#                  fast's session opened at N=21 under cProfile (tools/startup_probe.py --open)
#   bench-aa       the default `pytest bench/` twice, each timed, then `nqprof compare` of the two (A/A: no
#                  faster or slower verdict expected)
#   aslr           offset_probe --solve of devgraph N=10..12 and fast N=9, K fresh solves each, with the
#                  address-space layout randomized and under setarch -R (ASLR_K, default 6)
#   dg-levels      devgraph N=9, 11: one session's graphs made 8 times, rounds in
#                  turn over the sets (tools/devgraph_levels.py), beside 6 sessions reopened in one process
#   placement      fast N=8, 9: K placements of its counters, its tasks and both in one session, rounds interleaved
#                  over them (tools/placement_probe.py), beside 6 sessions reopened: is the offset where buffers lie?
#   offsets-keep   offset_probe --reopen of five small cases, 6 sessions each, their contexts made anew and then
#                  kept between the sessions (--keep-context): does a session redraw its offset without a context?
#   rot-aa         every GPU strategy at \$AA_N (default 8:13) twice (pytest bench/), the second gated by
#                  pytest-benchmark's median:5%, then nqprof compare; histories in \$OUT/rot-aa.tar.gz
#   small-aa       \$AA_STRATEGIES (default fast) at \$AA_N (default 8:13) three times (pytest bench/), then nqprof
#                  compare of runs 1, 2 and of 2, 3: the small cases' floors; histories in $OUT/small-aa.tar.gz
#   bench-aa-gate  the default `pytest bench/` twice, the second gated against the first by pytest-benchmark
#                  (--benchmark-compare-fail=median:5%), each timed; nqprof compare of the two; histories in
#                  $OUT/bench-aa-gate.tar.gz
#   bench-prepost  the default `pytest bench/` of an earlier tree (.stage/pre, e.g. `git archive COMMIT`), then
#                  twice of this one; nqprof compare of the earlier run against the first (what the change did)
#                  and of the two (A/A)
#   aa-queue       queue and feinbube N=12..16 six times, prepared workers starting CUDA as AA_MODES says
#                  (NQPROF_PREPARED_CUDA of each run, default: init late init late init late), compared in pairs
#   dask-one       fast N=21 on a one-worker Dask cluster (8 tasks) beside a plain solve, on one GPU
#   startup        the fixed cost of a run: tools/startup_probe.py, whole solves of fast, import times, one bench case's durations
#   fast-final     fast N=1..19 verified, N=16..21 timed, its bench cases twice compared, its GPU tests
#   feinbube-steps every optimisation step of feinbube, N=16..19, verified, 3 rounds
#   feinbube-tune  depth x block for the best step at N=18 and 19
#   cpu            serial vs a recursive C reference (N=15, 16); multicore speedup at N=17
#   cdp-smoke      each CDP strategy at N=10 and 12, then limits forced too small (must fail)
#   cdp-tests      the CDP GPU tests
#   table3         nqprof report table3 (boards per child grid, N=12)
#   cdp            the CDP strategies, N=4..16 verified
#   cdp-large      dp3 and dpswap at N=17 and 18 (defaults), verified
#   malloc         the device allocator: time to allocate blocks held at once vs freed at once
#   dp2-tune       dp2 host depth 3..5 at N=13..16 (search and child block from their defaults)
#   dp3-tune       dp3 host depth 3 and 4 at N=16..18
#   bench          pytest bench/ --benchmark-autosave (the whole suite)
#   trust-a        the default suite saved as run A of an A/A pair ($OUT/trust), and nqprof history's
#                  pytest-benchmark median beside the CUDA-event median for feinbube, fast, cdp-bp N=8..14
#   trust-b        the default suite again into the storage of trust-a (kept on the host between calls, or carried in
#                  .stage/trust), compared A/A
#   trust-c        a default moved in a copy of the tree (default: cdp-bp's host rows rows_default(5, 3) -> (4, 3);
#                  MOVE_FILE, MOVE_FROM, MOVE_TO, MOVE_STRATEGY), that strategy saved again as run C and compared
#                  with run B (the moved default is a verdict with its parameter named)
#   trust-cpu      the CPU strategies of the default suite (serial, serial-d4, multicore) twice, compared A/A
#   trace          pytest --nq-trace over feinbube, dp3, fast at N=12..14: its four stages below, in order
#   trace-a          run A, traced, saved (storage /tmp/nqprof-traced, kept while the host is)
#   trace-b          run B, traced, with feinbube's default block moved to FEINBUBE_BLOCK (default 128) and dp3's
#                    host depth below N=18 to DP3_DEPTH (default 4) in a copy
#                    of the tree
#   trace-c          run C, the same cases as A without --nq-trace (for the timing check)
#   trace-report     nqprof history; compare A B --traces (per-generation and per-kernel times of every case,
#                    what moved most); a stored trace through nqprof trace breakdown and trace chrome; compare A C
#                    (traced vs untraced timed statistics: same within noise when the profiled round is outside)
#   bench-compare  the whole suite again, compared with the published run (docs/results/benchmarks)
#   figure         nqprof report figure: time vs N, N=8..18, every strategy of the paper plus serial, feinbube
#   profile        nqprof profile solve 16 --strategy feinbube, and a CDP strategy
#   fast23         fast's constellation kernel (issue 23), under 9 min: (a) N=1..19 verified (sweep: exit 1 on a
#                  wrong count); (b) N=16..20 medians of 3 (-r 3 -w 1), then the old kernel (opt=tight-u4 at its
#                  old default depth N-11) beside it at the same N; N=21 new only (skipped past 150 s);
#                  (c) a depth sweep 0..4 at N=16 and 0..3 at N=18, medians of 3
#   table2         nqprof report table2 (DP-1, default stream vs own streams, N=8..15)
#   compat         load artifacts of a newer toolkit (tools/build_probe_artifacts.sh) under this driver
#   queue-verify   the queue strategy, both queues, N=4..18, verified
#   queue-time     queue (bq, bwd) and feinbube at N=19 (3 rounds) and N=20 (1 round), one run
#   queue-bench    nqprof queue-bench, 16-byte elements, table, JSON and figure
#   bench-smoke    pytest bench/ over a few strategies at N=12..13 (the plugin on the GPU)
#   characterize   Wang and Yalamanchili's measurements, each its own stage below; JSON (the fixtures
#                  for tests/data/characterize), Markdown tables and figures in $OUT/characterize
#   characterize-launch      launch time vs count, 32..256K and 1M, every launch mode (their Fig. 5)
#   characterize-reserve     reserved memory vs pending-launch and heap limits, sync depth (Fig. 6)
#   characterize-efficiency  ncu: feinbube, dp2, dp3, dpswap at N=14 (a CDP strategy's parent from the real run,
#                            its children from the launch=record replay, the first 100 replayed launches)
#   characterize-efficiency-carneiro  the same for dp1, cdp-bp, cdp-dp3 at N=14
#   characterize-ideal       ideal CDP time: dp2, dp3, dpswap at N=14 and 16, over feinbube (Fig. 4)
#   characterize-residency   blocks an SM holds at once, host- vs device-launched (CDP2 tail, fire-and-forget), by
#                            dynamic shared memory
#   characterize-timeline    dp3 N=13's device timeline: recording overhead; then under nsys, merged into its
#                            Chrome/Perfetto export (timeline-dp3-13.json)
#   cdp-cst        the cdp-cst-* stages below, in order (issue 35: device launching over fast's constellation kernel),
#                  in two device calls of under 9 minutes each:
#                    tools/gpu_check.sh cdp-cst-tests cdp-cst-verify cdp-cst-table cdp-cst-budget
#                    tools/gpu_check.sh cdp-cst-launch cdp-cst-22
#   cdp-cst-tests     the GPU tests of cdp-cst and graph-cst (tests/test_cdp_cst_gpu.py)
#   cdp-cst-verify    cdp-cst and graph-cst N=4..19 verified with the defaults, and N=8..16 with a small budget in
#                     both launch modes (many spilled tasks, several generations)
#   cdp-cst-table     one run each of fast, cdp-cst, graph-cst (N=16..21) and cdp-bp (N=16..18): whole-process and
#                     CUDA-event time, verified (tools/cdp_cst_table.py)
#   cdp-cst-budget    refinement at N=20: budgets and launch modes of cdp-cst and graph-cst, one run each
#   cdp-cst-launch    nqprof plan for both at N=22; characterize launch in every mode (graph modes included) at
#                     1K, 16K, 256K launches; characterize reserve
#   cst-kernels       graph-cst's generation 0 from fast's cubin and from its own module (count0) beside fast at
#                     N=19..21; cdp-cst and graph-cst with the counting kernels' shared carveout preference at 100%
#   cst-whole3        fast and graph-cst at N=19..21, three whole processes each, interleaved (medians)
#   cst-22b           fast and graph-cst at N=22, one round each
#   cst-k37           the constellation kernel's step variants (issue 37; \$K37_VARIANTS, ';'-separated builds)
#                     at N=16, 19, 20 (\$K37_N), medians of 3, each count verified (tools/cst_variants.py)
#   cst-sweep37       fast's block (64, 128, 256) at N=19, 20 and depth (3, 5 against the default 4) at N=20, medians of 3
#   cst-whole21       fast and graph-cst at N=21, seven whole processes each, interleaved (medians)
#   cdp-cst-big       cdp-cst at N=20..22, one round each (N=22 takes about 7 minutes)
#   cst-open          graph-cst's and fast's sessions opened at N=21 under cProfile (by cumulative and own time)
#   cst-carveout      cdp-cst at N=19, 20 with every kernel's shared carveout preference at the driver's, 100% and 0%
#   bench-profile     18 GPU cases of the suite (N=12..14) under cProfile ($OUT/bench-profile.pstats)
#   cdp-cst-22        fast, cdp-cst and graph-cst at N=22, one round each, whole-process and kernel time
#   carneiro       every carneiro-* stage below but carneiro-serial, in order (Carneiro et al.):
#   carneiro-plan     nqprof plan for the runs below (no GPU needed; the plans the runs will make)
#   carneiro-verify   cdp-bp and cdp-dp3, N=4..18, verified
#   carneiro-chunks   dp1 z=3 at N=15 by chunking (own streams, then the default stream)
#   carneiro-chunks-long  its two stages, each to a call of its own where calls are limited to 10 min:
#   carneiro-chunks-dp1-16  dp1 z=3 at N=16 by chunking (1,407 chunks, about 6.5 min)
#   carneiro-chunks-dp3-18  dp3 depth=3 at N=18 by chunking (570 chunks, about 2.5 min)
#   carneiro-default  config=default at N=13 (dp2 with the paper's DP2 parameters, dp3, cdp-dp3): must fail
#                     with nqprof's device-failure error (exit 2), never hang or count
#   carneiro-speed    cdp-bp vs feinbube and bp-dfs at N=17, 18 (3 rounds, GPU time)
#   carneiro-tune     cdp-bp at N=17: host depth x second depth x child block (are the paper's defaults best here?);
#                     then host depth 4 against 5 at N=16 and 18
#   carneiro-serial   serial N=17, 18 into a benchmark history (about 4 min): what carneiro-table2 reads for them
#   carneiro-table2   nqprof report carneiro table2 (serial from the published history, docs/results/benchmarks,
#                     N=17 and 18 included) and its figure
#   carneiro-memcheck  compute-sanitizer memcheck on every CDP strategy, N=10
#   carneiro-racecheck compute-sanitizer racecheck on every CDP strategy, N=10, every hazard printed with its
#                      source lines (--racecheck-report all): what the warning of dp1..dpswap is
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
run() {  # run NAME SECONDS COMMAND...: log to $OUT/NAME.log, never stop the script
  local name=$1 secs=$2
  shift 2
  echo "=== $name: $*"
  timeout --kill-after=10 "$secs" tools/gpuhost.sh "$@" 2>&1 | tee "$OUT/$name.log"
  echo "=== $name exit ${PIPESTATUS[0]}"
}
moved_tree() {  # /tmp/nqprof-moved: a copy of this tree with one default moved (MOVE_FILE, MOVE_FROM -> MOVE_TO;
  # default cdp-bp's host rows 5 -> 4), its diff printed; fails where nothing moved (a MOVE_FROM the file lacks)
  local mf=${MOVE_FILE:-src/nqprof/strategies/cdp_bp.py}
  rm -rf /tmp/nqprof-moved && mkdir -p /tmp/nqprof-moved
  cp -r . /tmp/nqprof-moved/ 2>/dev/null; rm -rf /tmp/nqprof-moved/.stage
  sed -i "s/${MOVE_FROM:-rows_default(5, 3)}/${MOVE_TO:-rows_default(4, 3)}/" "/tmp/nqprof-moved/$mf"
  if diff -q "$mf" "/tmp/nqprof-moved/$mf" >/dev/null; then echo "moved_tree: nothing moved in $mf"; return 1; fi
  diff "$mf" "/tmp/nqprof-moved/$mf" || true
}
C=$OUT/characterize
TRACED=/tmp/nqprof-traced  # the trace-* stages' history, kept between calls on one host
TRUST=/tmp/nqprof-trust    # the trust-* stages' history: kept on the host, copied to $OUT/trust after each
seed_trust() {  # a later trust stage on a fresh host starts from a copy carried in .stage/trust
  mkdir -p "$TRUST"
  if [ -z "$(ls -A "$TRUST")" ] && [ -d .stage/trust ]; then cp -r .stage/trust/. "$TRUST/"; fi
}
keep_trust() { mkdir -p "$OUT/trust" && cp -r "$TRUST/." "$OUT/trust/"; }
CST_METRICS=smsp__inst_executed.sum,smsp__thread_inst_executed_per_inst_executed.ratio,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,gpu__time_duration.sum
PIPE_METRICS=sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active
TRACE_CASES="--nq-strategy=feinbube,dp3,fast --nq-n=12:14"
fast_steps() {  # fast's steps (a)..(c) of fast23b and fast-final; $1 names their JSON files in $OUT
  cat <<EOF
echo '--- (a) fast N=1..19, one round each, every count verified';
timeout 150 nqprof sweep -s fast --n 1:19 --rounds 1 --warmup 0 --timeout 60 -q -o \$OUT/$1-verify.json; echo exit \$?;
echo '--- (b) fast N=16..20, medians of 3 (GPU time)';
timeout 120 nqprof sweep -s fast --n 16:20 --rounds 3 --warmup 1 --timeout 60 -q -o \$OUT/$1-time.json; echo exit \$?;
echo '--- (c) fast N=21, medians of 3';
timeout 200 nqprof solve 21 -s fast -r 3 -w 1 --timeout 190 -q | grep -E 'count|time|note'; echo exit \${PIPESTATUS[0]};
EOF
}
carneiro_stages="carneiro-plan carneiro-verify carneiro-chunks carneiro-chunks-dp1-16 carneiro-chunks-dp3-18 carneiro-default carneiro-speed carneiro-tune carneiro-table2 carneiro-memcheck carneiro-racecheck"
cdp_strategies="dp1 dp2 dp3 dpswap cdp-bp cdp-dp3"
GPU_STRATEGIES=fast,feinbube,bp-dfs,dp1,dp2,dp3,dpswap,cdp-bp,cdp-cst,cdp-dp3,graph-cst,devgraph,queue
stages=()
for stage in "$@"; do  # `characterize` and `carneiro` stand for their stages
  case $stage in
    characterize) stages+=(characterize-launch characterize-reserve characterize-efficiency
                           characterize-efficiency-carneiro characterize-ideal characterize-timeline characterize-residency) ;;
    carneiro) stages+=($carneiro_stages) ;;
    cdp-cst) stages+=(cdp-cst-tests cdp-cst-verify cdp-cst-table cdp-cst-budget cdp-cst-launch cdp-cst-22) ;;
    carneiro-chunks-long) stages+=(carneiro-chunks-dp1-16 carneiro-chunks-dp3-18) ;;
    trace) stages+=(trace-a trace-b trace-c trace-report) ;;
    *) stages+=("$stage") ;;
  esac
done
for stage in "${stages[@]}"; do
  case $stage in
    env) run env 120 nqprof env ;;
    live) run live 500 env NQPROF_REQUIRE_NSYS=1 python3 -m pytest tests/test_live_smoke_gpu.py --require-gpu \
        --durations=30 -q -rs -p no:cacheprovider ;;
    live-old) echo "=== live-old: the smoke's trace tests against .stage/main38"
      root=$PWD; (cd .stage/main38 && NQPROF_WHEELHOUSE=$root/.gpuhost/wheelhouse NQPROF_DEBS=$root/.gpuhost/deb \
        NQPROF_SITE=/tmp/nqprof-old-site timeout 400 tools/gpuhost.sh env NQPROF_REQUIRE_NSYS=1 python3 -m pytest \
        "$root/tests/test_live_smoke_gpu.py" -k "profile or nsys or nq_trace" --require-gpu -q -rs -p no:cacheprovider \
        --rootdir "$root" 2>&1 | tail -40 | tee "$OUT/live-old.log") ;;
    profiler-env) run profiler-env 200 bash -c "PY='import os; print(sorted((k, v) for k, v in os.environ.items() if any(w in k for w in (\"INJECT\", \"PRELOAD\", \"NSYS\", \"NSIGHT\", \"SANITIZER\", \"NV_\"))))';
        NSYS=\$(python3 -c 'from nqprof.analysis.trace import find_nsys; print(find_nsys())'); echo nsys: \$NSYS;
        echo '--- nsys'; \$NSYS profile -t cuda,nvtx -o /tmp/envprobe -f true python3 -c \"\$PY\" 2>&1 | grep -v '^Collecting\|^Generating\|^Processing';
        echo '--- ncu'; ncu python3 -c \"\$PY\" 2>&1 | grep -v '^==PROF==';
        echo '--- compute-sanitizer'; compute-sanitizer python3 -c \"\$PY\" 2>&1 | grep -v '^========= ERROR SUMMARY'" ;;
    tests-spares) echo "=== tests-spares: tests/test_cdp_gpu.py and test_queue_gpu.py under each spare policy of the GPU tests"
      for policy in ${SPARE_POLICIES:-context init:2 init:3}; do
        t0=$(date +%s%3N)
        NQPROF_TEST_SPARES=$policy timeout 300 tools/gpuhost.sh python3 -m pytest tests/test_cdp_gpu.py tests/test_queue_gpu.py \
          -m gpu --require-gpu -q -p no:cacheprovider 2>&1 | tail -1
        echo "policy $policy ms $(( $(date +%s%3N) - t0 ))"
      done 2>&1 | tee "$OUT/tests-spares.log"
      best=$(grep '^policy' "$OUT/tests-spares.log" | sort -k4 -n | awk '{print $2}' | head -1)
      echo "fastest: $best" | tee -a "$OUT/tests-spares.log"; echo "$best" > /tmp/nqprof-best-spares ;;
    tests-best) pol=$(cat /tmp/nqprof-best-spares 2>/dev/null || echo context)
      run tests-best 500 env NQPROF_TEST_SPARES=$pol python3 -m pytest tests -m gpu --require-gpu --durations=45 -q -rs \
        -p no:cacheprovider ;;
    devgraph-nsys) run devgraph-nsys 300 bash -c 'NSYS=$(python3 -c "from nqprof.analysis.trace import find_nsys; print(find_nsys())");
        for mode in default graph node; do
          extra=; [ $mode != default ] && extra="--cuda-graph-trace=$mode";
          echo "--- nsys $extra: devgraph N=12, graph-cst N=12";
          for s in devgraph graph-cst; do
            timeout 120 $NSYS profile -t cuda,nvtx $extra -o /tmp/dg-$mode-$s -f true --export sqlite \
              nqprof solve 12 -s $s -r 1 -w 0 2>&1 | grep -E "count|error|Error|WARN" | head -5;
            python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); t=[r[0] for r in c.execute(\"select name from sqlite_master where type=\x27table\x27\")];
print(sys.argv[2], {n: c.execute(f\"select count(*) from {n}\").fetchone()[0] for n in t if any(w in n for w in (\"KERNEL\",\"GRAPH\",\"MEMCPY\",\"NVTX\"))})" /tmp/dg-$mode-$s.sqlite $s;
            timeout 60 nqprof trace breakdown /tmp/dg-$mode-$s.sqlite 2>&1 | head -12;
          done; done' ;;
    fork-warn) run fork-warn 200 bash -c 'python3 -W always::DeprecationWarning -m pytest bench/ \
        --nq-strategy=serial,serial-d4,multicore --nq-n=8:10 -q -p no:cacheprovider \
        --benchmark-storage=/tmp/nqprof-forkwarn > /tmp/fork-warn.txt 2>&1; tail -3 /tmp/fork-warn.txt;
        echo "fork DeprecationWarnings: $(grep -c "use of fork" /tmp/fork-warn.txt)"' ;;
    instr-check) run instr-check 200 bash -c 'command -v valgrind; valgrind --version;
        nqprof solve 12 -s serial --instructions -r 3 -w 1 | grep -E "count|instructions"' ;;
    suite-seq) echo "=== suite-seq: the default pytest bench/ of each tree in \$SUITE_SEQ (${SUITE_SEQ:-old new old}), timed"
      # new: this tree, old: .stage/main38; the histories kept between calls (carried back in .stage/seq);
      # a new run after one saved compares with it: pytest-benchmark's 5% gate and nqprof's verdicts
      mkdir -p /tmp/nqprof-seq-new /tmp/nqprof-seq-old
      [ -d .stage/seq ] && [ -z "$(ls -A /tmp/nqprof-seq-new)" ] && cp -r .stage/seq/. /tmp/ 2>/dev/null
      root=$PWD
      for t in ${SUITE_SEQ:-old new old}; do
        if [ $t = old ]; then
          t0=$(date +%s%3N)
          (cd ${OLD_TREE:-.stage/main38} && NQPROF_WHEELHOUSE=$root/.gpuhost/wheelhouse NQPROF_DEBS=$root/.gpuhost/deb \
            NQPROF_SITE=/tmp/nqprof-old-site timeout 400 tools/gpuhost.sh python3 -m pytest bench/ -q -p no:cacheprovider \
            --durations=0 --benchmark-autosave --benchmark-storage=/tmp/nqprof-seq-old > /tmp/seq-old.txt 2>&1)
          code=$?; n=$(ls /tmp/nqprof-seq-old/*/ | wc -l); cp /tmp/seq-old.txt "$OUT/suite-old-$n.txt"; tail -1 /tmp/seq-old.txt
          echo "old (${OLD_TREE:-.stage/main38}) suite: exit $code, $(( $(date +%s%3N) - t0 )) ms"
        else
          gate=; [ -n "$(ls -A /tmp/nqprof-seq-new 2>/dev/null)" ] && \
            gate="--benchmark-compare --benchmark-compare-fail=median:5% --nq-compare-fail=slower,faster"
          t0=$(date +%s%3N)
          timeout 400 tools/gpuhost.sh python3 -m pytest bench/ -q -p no:cacheprovider --durations=0 --benchmark-autosave \
            --benchmark-storage=/tmp/nqprof-seq-new $gate > /tmp/seq-new.txt 2>&1; code=$?
          ms=$(( $(date +%s%3N) - t0 ))
          n=$(ls /tmp/nqprof-seq-new/*/ | wc -l); cp /tmp/seq-new.txt "$OUT/suite-new-$n.txt"
          grep -E "^FAILED|Performance has regressed|^Regressed|benchmark-compare-fail|verdicts?:|nqprof: gate" /tmp/seq-new.txt | head -20
          tail -1 /tmp/seq-new.txt
          echo "new suite (run $n${gate:+, gated against run $((n-1))}): exit $code, $ms ms"
        fi
        (cd /tmp && tar czf "$OUT/seq.tar.gz" nqprof-seq-new nqprof-seq-old)
      done 2>&1 | tee -a "$OUT/suite-seq.log" ;;
    ab-moved) rm -rf /tmp/nqprof-ab && mkdir -p /tmp/nqprof-ab && moved_tree || exit 1
      { t0=$(date +%s%3N); timeout 300 tools/gpuhost.sh python3 -m pytest bench/ -q -p no:cacheprovider $AB_ARGS \
          --benchmark-autosave --benchmark-storage=/tmp/nqprof-ab > "$OUT/ab-moved-a.txt" 2>&1
        echo "A (this tree): exit $?, $(( $(date +%s%3N) - t0 )) ms, $(tail -1 "$OUT/ab-moved-a.txt")"
        t0=$(date +%s%3N); (cd /tmp/nqprof-moved && NQPROF_SITE=/tmp/nqprof-site-moved timeout 300 tools/gpuhost.sh \
          python3 -m pytest bench/ -q -p no:cacheprovider $AB_ARGS --benchmark-autosave --benchmark-storage=/tmp/nqprof-ab \
          --benchmark-compare --benchmark-compare-fail=median:5% --nq-compare-fail=slower,faster) > "$OUT/ab-moved-b.txt" 2>&1
        echo "B (moved, gated against A): exit $?, $(( $(date +%s%3N) - t0 )) ms"
        grep -E "^FAILED|Performance has regressed|^Regressed|nqprof: gate" "$OUT/ab-moved-b.txt" | head -20
        tools/gpuhost.sh nqprof compare --storage /tmp/nqprof-ab 0001 0002 > "$OUT/ab-moved-compare.txt" 2>&1
        grep -E " (faster|slower) |[0-9]+ same" "$OUT/ab-moved-compare.txt"
        (cd /tmp && tar czf "$OUT/ab-moved.tar.gz" nqprof-ab); } 2>&1 | tee "$OUT/ab-moved.log" ;;
    ab-trials) run ab-trials 400 python3 tools/ab_trials.py --trials 10 ;;
    instr-aa) run instr-aa 300 bash -c 'for r in 1 2; do gate=; [ $r = 2 ] && gate="--benchmark-compare --benchmark-compare-fail=median:5% --nq-compare-fail=slower,faster";
        t0=$(date +%s%3N); python3 -m pytest bench/ --nq-strategy=serial,serial-d4,multicore --nq-cpu-metric=instructions -q \
          -p no:cacheprovider --benchmark-autosave --benchmark-storage=/tmp/nqprof-instr-aa $gate > /tmp/instr-aa-$r.txt 2>&1;
        echo "run $r: exit $?, $(( $(date +%s%3N) - t0 )) ms"; grep -E "^FAILED|regressed|nqprof: gate|nqprof: CPU" /tmp/instr-aa-$r.txt | head; tail -1 /tmp/instr-aa-$r.txt; done;
        cp /tmp/instr-aa-2.txt $OUT/instr-aa-2.txt; nqprof compare 0001 0002 --storage /tmp/nqprof-instr-aa --metric instructions | tail -40' ;;
    trace-dg) rm -rf /tmp/nqprof-trace-dg
      run trace-dg 300 bash -c 'for r in 1 2; do python3 -m pytest bench/ --nq-strategy=devgraph,graph-cst,fast --nq-n=12 --nq-trace \
          --benchmark-autosave --benchmark-storage=/tmp/nqprof-trace-dg -q -p no:cacheprovider 2>&1 | tail -2; done;
        nqprof compare 0001 0002 --storage /tmp/nqprof-trace-dg --traces | tail -60;
        for f in $(ls /tmp/nqprof-trace-dg/*/traces/*/*devgraph*.sqlite | head -1); do nqprof trace breakdown $f | head -30; done' ;;
    graph-limits) run graph-limits 300 nqprof characterize launch --modes graph-ff,graph-tail --counts 64,120,121,128,255,256 \
        --beyond-limits --timeout 30 -r 3 -w 1 -q ;;
    graph-tail-probe) run graph-tail-probe 200 nqprof characterize launch --modes graph-tail --counts 1,2,4,32 \
        --beyond-limits --timeout 15 -r 3 -w 1 -q ;;
    trace-all) rm -rf /tmp/nqprof-traced-all
      gpu=$(tools/gpuhost.sh python3 -c 'from nqprof.strategies import all_strategies as a; print(",".join(s.name for s in a() if s.needs_gpu))')
      for r in a b; do run trace-all-$r ${TRACE_ALL_SECONDS:-400} python3 -m pytest bench/ --nq-strategy=$gpu --nq-n=12 --nq-trace --benchmark-autosave \
          --benchmark-storage=/tmp/nqprof-traced-all -q -rs -p no:cacheprovider; done
      run trace-all-compare 200 bash -c "S=/tmp/nqprof-traced-all; nqprof compare --storage \$S 0001 0002 --traces;
          f=\$(ls \$S/*/traces/*/*feinbube*.sqlite | head -1); nqprof trace breakdown \$f | head -12;
          cd \$S && find . -name '*.json' -not -path '*timeline*' | tar czf \$OUT/trace-all.tar.gz -T -" ;;
    oldnew-cases) echo "=== oldnew-cases: ${OLDNEW_STRATEGIES:=cdp-bp} at N=${OLDNEW_N:=8:9}, this tree and .stage/main38, interleaved"
      rm -rf /tmp/nqprof-oldnew; root=$PWD
      for i in 1 2 3; do for t in old new; do
        if [ $t = new ]; then dir=$root site=/tmp/nqprof-site; else dir=$root/.stage/main38 site=/tmp/nqprof-old-site; fi
        (cd $dir && PYTHONPATH=$site PATH=$site/bin:$PATH timeout 200 python3 -m pytest bench/ -q -p no:cacheprovider \
          --nq-strategy=$OLDNEW_STRATEGIES --nq-n=$OLDNEW_N --benchmark-save=$t$i \
          --benchmark-storage=/tmp/nqprof-oldnew 2>&1 | tail -1)
      done; done
      (cd /tmp && tar czf "$OUT/oldnew.tar.gz" nqprof-oldnew)
      for pair in "0001 0002" "0003 0004" "0005 0006"; do  # old1 new1, old2 new2, old3 new3
        tools/gpuhost.sh nqprof compare $pair --storage /tmp/nqprof-oldnew | grep -E "^[a-z0-9-]+ +[0-9]+ |same|faster|slower"
      done ;;
    solve20) echo "=== solve20: whole nqprof solve 20 -s fast -r 1 -w 0, this tree and ${OLD_TREE:-.stage/main38}, interleaved"
      root=$PWD; (cd ${OLD_TREE:-.stage/main38} && NQPROF_WHEELHOUSE=$root/.gpuhost/wheelhouse NQPROF_DEBS=$root/.gpuhost/deb \
        NQPROF_SITE=/tmp/nqprof-old-site tools/gpuhost.sh true)
      for i in $(seq ${SOLVE20_RUNS:-3}); do for t in new old; do
        if [ $t = new ]; then site=/tmp/nqprof-site; else site=/tmp/nqprof-old-site; fi
        s=$( { TIMEFORMAT=%R; time PYTHONPATH=$site PATH=$site/bin:$PATH timeout 120 nqprof solve 20 -s fast -r 1 -w 0 \
          > /tmp/solve20-$t-$i.txt 2>&1; } 2>&1 )
        echo "$t run $i: whole $s s, $(grep -E 'count|GPU time' /tmp/solve20-$t-$i.txt | tr -s ' ' | tr '\n' ' ')"
      done; done 2>&1 | tee "$OUT/solve20.log"
      python3 - "$OUT/solve20.log" <<'PY' | tee -a "$OUT/solve20.log"
import re, statistics, sys
runs = {"new": [], "old": []}
for line in open(sys.argv[1]):
    m = re.match(r"(new|old) run (\d+): whole ([0-9.]+) s", line)
    if m and m[2] != "1":  # run 1 of each fills the caches
        runs[m[1]].append(float(m[3]))
new, old = (statistics.median(runs[t]) for t in ("new", "old"))
print(f"medians of runs 2 on: new {new:.3f} s, old {old:.3f} s, new - old {new - old:+.3f} s")
PY
      for t in new old; do  # where a whole solve's time goes (the parent process), one run each
        if [ $t = new ]; then site=/tmp/nqprof-site; else site=/tmp/nqprof-old-site; fi
        PYTHONPATH=$site PATH=$site/bin:$PATH timeout 120 python3 -m cProfile -s cumtime -m nqprof.cli solve 20 -s fast \
          -r 1 -w 0 2>&1 | head -60 > "$OUT/solve20-profile-$t.txt"
      done ;;
    launch-default) run launch-default 600 bash -c "TIMEFORMAT='whole %R s'; time nqprof characterize launch -q -o \$OUT/launch-default.json -o \$OUT/launch-default.md" ;;
    offsets) run offsets-solo 200 python3 tools/offset_probe.py --solve fast:9 --solve fast:8 --solve devgraph:11 \
        --solve devgraph:10 -k 4 -r 100 ;&
    offsets-variants)
      for v in ${OFFSET_VARIANTS:-default nospare nowatch four}; do
        rm -rf /tmp/nqprof-off-$v
        for i in $(seq ${OFFSET_RUNS:-2}); do
          OFFSET_VARIANT=$v PYTHONPATH=$PWD/tools timeout 200 tools/gpuhost.sh python3 -m pytest bench/ -p offset_variants \
            --nq-strategy=${OFFSET_STRATEGIES:-fast,devgraph} --nq-n=${OFFSET_N:-8:11} --benchmark-autosave --benchmark-storage=/tmp/nqprof-off-$v \
            -q -p no:cacheprovider 2>&1 | tail -1
        done
        echo "--- variant $v"
        tools/gpuhost.sh python3 tools/offset_probe.py /tmp/nqprof-off-$v/*/*.json
      done 2>&1 | tee "$OUT/offsets.log" ;;
    offsets-reopen) run offsets-reopen 300 python3 tools/offset_probe.py --reopen fast:9 --reopen fast:10 \
        --reopen devgraph:11 --reopen devgraph:10 --solve fast:9 --solve devgraph:11 -k 6 -r 100 ;;
    offsets-keep) for mode in "" --keep-context; do run "offsets-keep$mode" 200 python3 tools/offset_probe.py $mode \
        --reopen fast:8 --reopen fast:9 --reopen cdp-bp:9 --reopen devgraph:10 --reopen bp-dfs:8 -k 6 -r 100; done ;;
    aslr) echo "=== aslr: devgraph's process medians with the address-space layout randomized (as is) and not (setarch -R)"
      cat /proc/sys/kernel/randomize_va_space
      run aslr-on 300 python3 tools/offset_probe.py --solve devgraph:10 --solve devgraph:11 --solve devgraph:12 \
        --solve fast:9 -k ${ASLR_K:-6} -r 100
      run aslr-off 300 setarch "$(uname -m)" -R python3 tools/offset_probe.py --solve devgraph:10 --solve devgraph:11 \
        --solve devgraph:12 --solve fast:9 -k ${ASLR_K:-6} -r 100 ;;
    dg-levels) run dg-levels 200 python3 tools/devgraph_levels.py --n 9 --n 11 -k 8 -r 40
      run dg-levels-reopen 200 python3 tools/offset_probe.py --reopen devgraph:9 --reopen devgraph:11 -k 6 -r 60 ;;
    placement) run placement 200 python3 tools/placement_probe.py --n 8 --n 9 -k 8 -r 80
        run placement-reopen 200 python3 tools/offset_probe.py --reopen fast:8 --reopen fast:9 -k 6 -r 100 ;;
    build) run build 300 nqprof build ;;
    cdp-final) run cst-final 300 python3 tools/cdp_cst_table.py --n 19:21 --case fast --case cdp-cst --repeats 3 \
            --out "$OUT/cst-final"
        run blocks 300 nqprof characterize blocks --n 17:19 -o "$OUT/blocks.json" -o "$OUT/blocks.md" \
            --figure "$OUT/blocks.png"
        run latency 120 nqprof characterize latency --trials 200 -o "$OUT/latency.json" -o "$OUT/latency.md" ;;
    latency) run latency 120 nqprof characterize latency --trials 200 -o "$OUT/latency.json" -o "$OUT/latency.md"
        run blocks 200 nqprof characterize blocks --n 19 -o "$OUT/blocks.json" -o "$OUT/blocks.md" \
            --figure "$OUT/blocks.png" ;;
    cdp-bounds) for b in threads none; do run "blocks-$b" 200 nqprof characterize blocks --n 19 \
            --paths host,cdp-tail,cdp-ff,cdp-host -p bounds=$b -o "$OUT/blocks-$b.json" -o "$OUT/blocks-$b.md"; done
        run cst-fixed 300 python3 tools/cdp_cst_table.py --n 19:21 --case fast --case cdp-cst --repeats 3 --out "$OUT/cst-fixed"
        run cdp-cst-tests 150 python3 -m pytest tests/test_cdp_cst_gpu.py --require-gpu -q -rs -p no:cacheprovider ;;
    blocks-bounds) run blocks-prebuild 120 python3 tools/blocks_prebuild.py ${BOUNDS:-0 2 4 6 8}
        for k in ${BOUNDS:-0 2 4 6 8}; do run "blocks-mb$k" 120 nqprof characterize blocks --n 19 \
            --paths cdp-tail,cdp-host -p min_blocks=$k -r 2 -w 1 -o "$OUT/blocks-mb$k.json" -o "$OUT/blocks-mb$k.md"; done
        run blocks-b768 200 nqprof characterize blocks --n 19 --paths host,cdp-tail,cdp-host -p block=768 -r 2 -w 1 \
            -o "$OUT/blocks-b768.json" -o "$OUT/blocks-b768.md" ;;
    blocks) run blocks 400 nqprof characterize blocks --n ${BLOCKS_N:-17:19} ${BLOCKS_PATHS:+--paths $BLOCKS_PATHS} \
        -o "$OUT/blocks.json" -o "$OUT/blocks.md" --figure "$OUT/blocks.png" ;;
    dg-aa) echo "=== dg-aa"; rm -rf /tmp/nqprof-dgaa
      for i in 1 2; do
        timeout 200 tools/gpuhost.sh python3 -m pytest bench/ --nq-strategy=devgraph,fast --nq-n=8:13 \
          --benchmark-autosave --benchmark-storage=/tmp/nqprof-dgaa -q -p no:cacheprovider 2>&1 | tail -1
      done 2>&1 | tee "$OUT/dg-aa.log"
      timeout 100 tools/gpuhost.sh nqprof compare 0001 0002 --storage /tmp/nqprof-dgaa 2>&1 | tee -a "$OUT/dg-aa.log"
      tools/gpuhost.sh python3 tools/offset_probe.py /tmp/nqprof-dgaa/*/*.json 2>&1 | tee -a "$OUT/dg-aa.log"
      (cd /tmp && tar czf "$OUT/dg-aa.tar.gz" nqprof-dgaa) ;;
    tests-some) run tests-some 300 python3 -m pytest ${TESTS_FILES:-tests} -m gpu --require-gpu -k "$TESTS_K" -q -rs \
        -p no:cacheprovider ;;
    tests) run tests 500 python3 -m pytest tests -m gpu --require-gpu --durations=0 -q -rs -p no:cacheprovider ;;
    feinbube-steps) run feinbube-steps 500 nqprof sweep -s feinbube --n 16:19 \
        --param opt=local,shared-stack,shared-all,extern,rows-left --repeats 3 --warmup 1 -o "$OUT/feinbube-steps.json" ;;
    feinbube-tune) run feinbube-tune 500 nqprof sweep -s feinbube --n 18:19 \
        --param depth=5,6,7 --param block=64,128,256 --repeats 3 --warmup 1 -o "$OUT/feinbube-tune.json" ;;
    cpu) run cpu 500 bash -c "python3 bench/cpu_reference.py 15 16 --repeats 5 && python3 bench/cpu_reference.py --multicore 17 --repeats 3" ;;
    cdp-smoke) run cdp-smoke 300 bash -c "for s in dp3 dp2 dp1 dpswap; do timeout 120 nqprof solve 10 -s \$s -q; done;
        timeout 120 nqprof solve 12 -s dp2 -p depth=1 -p search=4 -p block=256 -p child_block=256 -q;
        timeout 120 nqprof solve 12 -s dp2 -p depth=4 -p search=2 -p pending=32 -q; echo exit \$?;
        timeout 120 nqprof solve 13 -s dp2 -p depth=2 -p search=6 -p heap_mib=1 -q; echo exit \$?;
        timeout 60 nqprof solve 16 -s dp1 -p z=1 -q; echo exit \$?" ;;
    cdp-tests) run cdp-tests 500 python3 -m pytest tests/test_cdp_gpu.py -q -rs -x -p no:cacheprovider ;;
    table3) run table3 300 nqprof report table3 -o "$OUT/table3.md" ;;
    cdp) run cdp 560 bash -c "for s in dp1 dp2 dp3 dpswap; do nqprof sweep -s \$s --n 4:16 --repeats 1 --warmup 0 --timeout 60; done" ;;
    cdp-large) run cdp-large 580 bash -c "for s in dpswap dp3; do nqprof sweep -s \$s --n 17:18 --repeats 1 --warmup 0 --timeout 150; done" ;;
    malloc) run malloc 200 python3 tools/malloc_probe.py --heap-mib 6144 --budget-s 20 ;;
    dp2-tune) run dp2-tune 400 nqprof sweep -s dp2 --n 13:16 --param depth=3,4,5 --repeats 3 --warmup 1 \
        --timeout 60 -o "$OUT/dp2-tune.json" ;;
    dp3-tune) run dp3-tune 300 nqprof sweep -s dp3 --n 16:18 --param depth=3,4 --repeats 3 --warmup 1 \
        --timeout 60 -o "$OUT/dp3-tune.json" ;;
    trust-a) rm -rf "$TRUST" && mkdir -p "$TRUST"
      run trust-a 590 bash -c "python3 -m pytest bench/ --benchmark-autosave --benchmark-storage=$TRUST \
          -q -rs -p no:cacheprovider && nqprof history $TRUST | grep -E '^ *run|^ *0001 +(feinbube|fast|cdp-bp) +(8|9|10|11|12|13|14) '"
      keep_trust ;;
    trust-b) seed_trust
      run trust-b 590 bash -c "python3 -m pytest bench/ --benchmark-autosave --benchmark-storage=$TRUST -q \
          -p no:cacheprovider && nqprof compare --storage $TRUST 0001 0002"
      keep_trust ;;
    trust-c) seed_trust; moved_tree || exit 1  # benchmarked for MOVE_STRATEGY
      run trust-c 400 bash -c "cd /tmp/nqprof-moved && NQPROF_SITE=/tmp/nqprof-site-moved tools/gpuhost.sh python3 -m pytest \
          bench/ --nq-strategy=${MOVE_STRATEGY:-cdp-bp} --benchmark-autosave --benchmark-storage=$TRUST -q \
          -p no:cacheprovider && cd - >/dev/null && nqprof compare --storage $TRUST 0002 0003"
      keep_trust ;;
    trust-cpu) rm -rf /tmp/nqprof-trust-cpu
      run trust-cpu 500 bash -c "for i in 1 2; do python3 -m pytest bench/ --nq-strategy=serial,serial-d4,multicore \
          --benchmark-autosave --benchmark-storage=/tmp/nqprof-trust-cpu -q -p no:cacheprovider | tail -1; done &&
          nqprof compare --storage /tmp/nqprof-trust-cpu 0001 0002 && cp -r /tmp/nqprof-trust-cpu \$OUT/trust-cpu" ;;
    trace-a) rm -rf "$TRACED"
      run trace-a 580 python3 -m pytest bench/ $TRACE_CASES --nq-trace --benchmark-autosave \
          --benchmark-storage="$TRACED" -q -rs -p no:cacheprovider ;;
    trace-b) rm -rf /tmp/nqprof-moved-trace && mkdir -p /tmp/nqprof-moved-trace && cp -r . /tmp/nqprof-moved-trace/ 2>/dev/null
      sed -i "s/block_param(64),/block_param(${FEINBUBE_BLOCK:-128}),/" /tmp/nqprof-moved-trace/src/nqprof/strategies/feinbube.py
      sed -i "s/return 4 if n >= 18 else max(1, min(3, n - 3))/return 4 if n >= 18 else max(1, min(${DP3_DEPTH:-4}, n - 3))/" \
        /tmp/nqprof-moved-trace/src/nqprof/strategies/dp3.py
      for f in feinbube dp3; do diff src/nqprof/strategies/$f.py /tmp/nqprof-moved-trace/src/nqprof/strategies/$f.py; done
      run trace-b 580 bash -c "cd /tmp/nqprof-moved-trace && NQPROF_SITE=/tmp/nqprof-site-moved tools/gpuhost.sh \
          python3 -m pytest bench/ $TRACE_CASES --nq-trace --benchmark-autosave --benchmark-storage=$TRACED -q -rs \
          -p no:cacheprovider" ;;
    trace-c) run trace-c 580 python3 -m pytest bench/ $TRACE_CASES --benchmark-autosave --benchmark-storage="$TRACED" \
          -q -rs -p no:cacheprovider ;;
    trace-report) run trace-report 300 bash -c "set -e; S=$TRACED
        echo '--- nqprof history (runs with traces)'; nqprof history \$S | sed -n '1,4p'
        echo '--- nqprof compare 0001 0002 --traces (B: feinbube block moved to ${FEINBUBE_BLOCK:-128}, dp3 depth to ${DP3_DEPTH:-4})'
        nqprof compare --storage \$S 0001 0002 --traces
        f=\$(ls \$S/*/traces/*/*dp3-N13*.sqlite | head -1); ls -l \$S/*/traces/*/ | head -12
        echo \"--- nqprof trace breakdown \$f (first lines)\"; nqprof trace breakdown \$f | head -20
        echo '--- nqprof trace chrome'; nqprof trace chrome \$f -o \$OUT/trace-dp3-13.json
        echo '--- timed statistics with --nq-trace (A, 0001) vs without (C, 0003): same within noise?'
        nqprof compare --storage \$S 0001 0003 | sed 1,3d
        mkdir -p \$OUT/traced && cd \$S && find . -name '*.json' -not -path '*/traces/*' -exec cp --parents {} \$OUT/traced/ \;" ;;
    bench) run bench 580 python3 -m pytest bench/ --benchmark-autosave --benchmark-storage="$OUT/benchmarks" -rs -q -p no:cacheprovider ;;
    bench-compare) published=docs/results/benchmarks/h200-cuda13.0-0001.json
        machine=$(python3 -c "from pytest_benchmark.utils import get_machine_id; print(get_machine_id())")
        mkdir -p "$OUT/benchmarks/$machine" && cp "$published" "$OUT/benchmarks/$machine/0001_published.json"
        run bench 580 python3 -m pytest bench/ --benchmark-autosave --benchmark-compare=0001 \
            --benchmark-storage="$OUT/benchmarks" -rs -q -p no:cacheprovider
        run compare 60 nqprof compare --storage "$OUT/benchmarks" 0001 0002 ;;
    figure) run figure 580 nqprof report figure -o "$OUT/time_vs_n_report.png" --n 8:18 --timeout 60 ;;
    fast23) run fast23 540 bash -c "
        echo '--- (a) fast (constellations) N=1..19, one round each, every count verified';
        timeout 150 nqprof sweep -s fast --n 1:19 --rounds 1 --warmup 0 --timeout 60 -q -o \$OUT/fast23-verify.json;
        echo exit \$?;
        echo '--- (b) new: fast N=16..20, medians of 3 (GPU time)';
        timeout 120 nqprof sweep -s fast --n 16:20 --rounds 3 --warmup 1 --timeout 60 -q -o \$OUT/fast23-time.json;
        echo exit \$?;
        echo '--- (b) old: fast opt=tight-u4 (Takaken) at its old default depth, N=16..20, medians of 3';
        for n in 16 17 18 19 20; do d=\$(( n - 11 > 7 ? 7 : n - 11 )); echo \"N=\$n tight-u4 depth=\$d\";
          timeout 60 nqprof solve \$n -s fast -p opt=tight-u4 -p depth=\$d -r 3 -w 1 -q | grep -E 'count|time|note';
          echo exit \${PIPESTATUS[0]}; done;
        echo '--- (b) new: fast N=21, medians of 3 (skipped past 150 s; the old kernel took 34 s a round)';
        timeout 150 nqprof solve 21 -s fast -r 3 -w 1 --timeout 140 -q | grep -E 'count|time|note';
        echo exit \${PIPESTATUS[0]};
        echo '--- (c) depth sweep, medians of 3';
        timeout 90 nqprof sweep -s fast --n 16 --param depth=0,1,2,3,4 --rounds 3 --warmup 1 --timeout 60 -q \
          -o \$OUT/fast23-depth16.json; echo exit \$?;
        timeout 90 nqprof sweep -s fast --n 18 --param depth=0,1,2,3 --rounds 3 --warmup 1 --timeout 60 -q \
          -o \$OUT/fast23-depth18.json; echo exit \$?" ;;
    cst-variants) run cst-variants 560 bash -c "
        echo '--- fast constellation kernel (tools/cst_variants.py), default depth, medians of 3';
        python3 tools/cst_variants.py --n 16,18,19,20 --rounds 3 -o \$OUT/cst-variants.json; echo exit \$?;
        echo '--- the default variant: block x unroll at N=19';
        python3 tools/cst_variants.py --n 19 --blocks 64,128,256 --unroll 2,4,8 --rounds 3 \
          -o \$OUT/cst-variants-tune.json; echo exit \$?" ;;
    cst-mix) run cst-mix 200 python3 tools/sass_mix.py ${CST_MIX:-} ;;
    cst-ncu) run cst-ncu 400 ncu --kernel-name constellation --launch-count 4 --metrics $CST_METRICS,$PIPE_METRICS \
        python3 tools/cst_variants.py --n 17 --rounds 1 ${K37_VARIANTS:+--variants "$K37_VARIANTS"} ;;
    fast23b) run fast23b 560 bash -c "$(fast_steps fast23b)
        echo '--- (d) CPU: serial vs serial-d4 at N=16; the mirror pool vs multicore at N=17 (every core)';
        timeout 150 python3 bench/cst_cpu.py --twin 16 --pool 17 --repeats 3; echo exit \$?" ;;
    fast-final) run fast-final 560 bash -c "$(fast_steps fast-final)
        echo '--- (d) fast in the benchmark suite, twice, compared';
        rm -rf /tmp/nqprof-fast-aa; for i in 1 2; do timeout 100 python3 -m pytest bench/ --nq-strategy=fast \
          --benchmark-autosave --benchmark-storage=/tmp/nqprof-fast-aa -q -p no:cacheprovider | tail -1; done;
        nqprof compare --storage /tmp/nqprof-fast-aa 0001 0002 | tail -12;
        echo '--- (e) fast GPU tests'; timeout 150 python3 -m pytest tests/test_gpu_fast.py -m gpu --require-gpu -q \
          -p no:cacheprovider | tail -2" ;;
    cst-sass) mkdir -p "$OUT/sass"; run cst-sass 400 bash -c "
        nvcc=\$(python3 -c 'from nqprof.cuda.toolkit import find_toolkit; print(find_toolkit().nvcc)');
        \$nvcc -arch=sm_90 -cubin -DNQ_BLOCK=128 -Ikernels -o /tmp/cst.cubin kernels/constellation.cu &&
          \$(dirname \$nvcc)/cuobjdump -sass /tmp/cst.cubin > \$OUT/sass/constellation.sass;
        rm -f /tmp/cst-src.ncu-rep; timeout 200 ncu --kernel-name constellation --launch-skip 1 --launch-count 1 \
          --section SourceCounters -o /tmp/cst-src python3 tools/cst_variants.py --n 16 --rounds 1 \
          | grep -vE '^==PROF==';
        ncu -i /tmp/cst-src.ncu-rep --page source --print-source sass --csv > \$OUT/sass/n16-source.csv;
        echo exit \$?; wc -l \$OUT/sass/*" ;;
    fast-vs) run fast-vs 400 bash -c "rm -rf /tmp/nqprof-vs;
        echo '--- the GPU strategies of the suite within 10x of fast (the A/A pair), N=10..18, one run';
        timeout 380 python3 -m pytest bench/ --nq-strategy=fast,bp-dfs,feinbube,queue,cdp-bp,devgraph --nq-n=10:18 \
          --benchmark-autosave --benchmark-storage=/tmp/nqprof-vs -q -p no:cacheprovider | tail -3;
        cp -r /tmp/nqprof-vs \$OUT/fast-vs" ;;
    fast-check) run fast-check 300 bash -c "
        echo '--- compute-sanitizer memcheck: fast at N=4, 6, 9 (two levels kept, the fewest) and 12 (depth 0)';
        for a in 4 6 9 '12 -p depth=0'; do timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 \
          nqprof solve \$a -s fast --rounds 1 --warmup 0 --timeout 100 -q | grep -E 'ERROR SUMMARY|count|Invalid';
          echo \"N=\$a exit \${PIPESTATUS[0]}\"; done;
        echo '--- depth 3, 4, 5 at N=19, 20, medians of 3';
        timeout 200 python3 tools/cst_variants.py --n 19,20 --depth 3,4,5 --rounds 3 -o \$OUT/fast-check-depth.json;
        echo exit \$?" ;;
    cpu-cst) run cpu-cst 300 bash -c "
        echo '--- CPU: serial vs serial-d4 at N=16; the mirror pool vs multicore at N=17 (every core)';
        timeout 250 python3 bench/cst_cpu.py --twin 16 --pool 17 --repeats 3; echo exit \$?" ;;
    fast22) run fast22 560 bash -c "echo '--- fast N=22, one round (GPU time)';
        timeout 540 nqprof solve 22 -s fast -r 1 -w 0 --timeout 530 | grep -E 'count|time|note|verified';
        echo exit \${PIPESTATUS[0]}" ;;
    profile) run profile 300 bash -c "nqprof profile --output \$OUT/feinbube16 -- solve 16 --strategy feinbube --repeats 2 &&
        nqprof profile --output \$OUT/dp3-13 -- solve 13 --strategy dp3 --repeats 2 && rm -f \$OUT/*.nsys-rep" ;;
    table2) run table2 300 nqprof report table2 --n 8:15 --timeout 120 -o "$OUT/table2.md" ;;
    compat) run compat 120 bash -c "python3 tools/toolkit_probe.py .gpuhost/probe && python3 -m pytest tests/test_toolkit_compat_gpu.py -q -rs -p no:cacheprovider" ;;
    queue-verify) run queue-verify 300 nqprof sweep --strategy queue --n 4:18 --param queue.queue=bq,bwd \
        --rounds 1 --warmup 0 -q -o "$OUT/queue-verify.json" ;;
    queue-time) run queue-time 300 bash -c "nqprof sweep --strategy queue,feinbube --n 19 --param queue.queue=bq,bwd \
        --rounds 3 --warmup 1 -q -o \$OUT/queue-time-19.json && nqprof sweep --strategy queue,feinbube --n 20 \
        --param queue.queue=bq,bwd --rounds 1 --warmup 0 -q -o \$OUT/queue-time-20.json" ;;
    queue-bench) run queue-bench 300 nqprof queue-bench --sizes 16 -q -o "$OUT/queue-bench.json" \
        --figure "$OUT/queue-fig1.png" ;;
    bench-smoke) run bench-smoke 300 python3 -m pytest bench/ --nq-strategy=serial,feinbube,dp3,queue --nq-n=12:13 \
        --benchmark-autosave --benchmark-storage="$OUT/benchmarks" -rs -q -p no:cacheprovider ;;
    characterize-launch) mkdir -p "$C"; run characterize-launch 590 nqprof characterize launch --repeats 5 --warmup 1 \
        --timeout 60 -o "$C/launch.json" --figure "$C/fig5-launch.png" -o "$C/launch.md" -q ;;
    characterize-reserve) mkdir -p "$C"; run characterize-reserve 500 nqprof characterize reserve --timeout 60 \
        -o "$C/reserve.json" --figure "$C/fig6-reserve.png" -o "$C/reserve.md" -q ;;
    characterize-efficiency) mkdir -p "$C"; run characterize-efficiency 590 nqprof characterize efficiency --n 14 \
        --strategies feinbube,dp2,dp3,dpswap --child-launches 100 --timeout 120 --out-dir "$C/ncu" \
        -o "$C/efficiency.json" -o "$C/efficiency.md" -q; rm -f "$C"/ncu/*.ncu-rep ;;
    characterize-efficiency-carneiro) mkdir -p "$C"; run characterize-efficiency-carneiro 590 nqprof characterize \
        efficiency --n 14 --strategies dp1,cdp-bp,cdp-dp3 --child-launches 100 --timeout 120 --out-dir "$C/ncu" \
        -o "$C/efficiency-carneiro.json" -o "$C/efficiency-carneiro.md" -q; rm -f "$C"/ncu/*.ncu-rep ;;
    characterize-ideal) mkdir -p "$C"; run characterize-ideal 580 nqprof characterize ideal --n 14,16 \
        --strategies dp2,dp3,dpswap --baselines feinbube --repeats 3 --warmup 1 --timeout 60 \
        -o "$C/ideal.json" --figure "$C/fig4-ideal.png" -o "$C/ideal.md" -q ;;
    characterize-residency) mkdir -p "$C"; run characterize-residency 150 nqprof characterize residency --timeout 120 \
        -o $C/residency.json -o $C/residency.md ;;
    characterize-timeline) mkdir -p "$C"; run characterize-timeline 400 bash -c "
        nqprof characterize timeline 13 --strategy dp3 --repeats 5 --timeout 60 -o $C/timeline.json \
          --chrome $C/timeline-dp3-13-alone.json -o $C/timeline.md -q &&
        nqprof profile --output $C/dp3-13-timeline -- characterize timeline 13 --strategy dp3 --repeats 3 \
          --timeout 60 -o $C/timeline-nsys.json -q &&
        nqprof characterize timeline --from $C/timeline-nsys.json --nsys $C/dp3-13-timeline.sqlite \
          --chrome $C/timeline-dp3-13.json; rm -f $C/*.nsys-rep" ;;
    cdp-cst-tests) run cdp-cst-tests 100 python3 -m pytest tests/test_cdp_cst_gpu.py --require-gpu -q -rs \
        --durations=5 -p no:cacheprovider ;;
    cdp-cst-verify) run cdp-cst-verify 165 bash -c "for s in cdp-cst graph-cst; do
        echo \"--- \$s N=4..19, defaults\"; timeout 40 nqprof sweep -s \$s --n 4:19 --rounds 1 --warmup 0 --timeout 30 -q \
          -o \$OUT/cdp-cst-verify-\$s.json; echo exit \$?;
        echo \"--- \$s N=8..16, budget=64 gens=8, both modes\"; timeout 40 nqprof sweep -s \$s --n 8:16 \
          --param \$s.budget=64 --param \$s.mode=tail,fire-and-forget --rounds 1 --warmup 0 --timeout 30 -q \
          -o \$OUT/cdp-cst-verify-budget-\$s.json; echo exit \$?; done" ;;
    cdp-cst-table) run cdp-cst-table 230 bash -c "
        timeout 225 python3 tools/cdp_cst_table.py --n 16:21 --case fast --case cdp-cst --case graph-cst --case cdp-bp \
          --max-n cdp-bp=18 --timeout 70 --budget-s 170; echo exit \$?" ;;
    cdp-cst-budget) run cdp-cst-budget 85 bash -c "
        timeout 80 python3 tools/cdp_cst_table.py --n 20 --case cdp-cst:budget=4096 --case cdp-cst:budget=65536 \
          --case cdp-cst:budget=1048576 --case cdp-cst:budget=65536,mode=fire-and-forget \
          --case cdp-cst:mode=fire-and-forget --case graph-cst:budget=65536 --case graph-cst:mode=fire-and-forget \
          --timeout 30 --budget-s 55; echo exit \$?" ;;
    cdp-cst-launch) mkdir -p "$C"; run cdp-cst-launch 200 bash -c "
        nqprof plan 22 -s cdp-cst; nqprof plan 22 -s graph-cst -p budget=65536;
        timeout 140 nqprof characterize launch --counts 1K,16K,256K --rounds 3 --warmup 1 --timeout 30 \
          -o $C/launch-cst.json -o $C/launch-cst.md -q; echo exit \$?;
        timeout 50 nqprof characterize reserve --timeout 30 -o $C/reserve-cst.json -o $C/reserve-cst.md -q; echo exit \$?" ;;
    cst-kernels) run cst-kernels 300 bash -c "
        timeout 150 python3 tools/cdp_cst_table.py --n 19:21 --case fast --case graph-cst \
          --case graph-cst:count0=own --timeout 40 --budget-s 140; echo exit \$?;
        timeout 120 python3 tools/cdp_cst_table.py --n 19:20 --case cdp-cst --case cdp-cst:carveout=100 \
          --case graph-cst:carveout=100 --timeout 40 --budget-s 110; echo exit \$?" ;;
    cst-whole3) run cst-whole3 150 bash -c "timeout 145 python3 tools/cdp_cst_table.py --n 19:21 --case fast --case graph-cst \
          --repeats 3 --timeout 40 --budget-s 130 --out \$OUT/cst-whole3; echo exit \$?" ;;
    cst-k37) run cst-k37 420 bash -c "timeout 415 python3 tools/cst_variants.py --n \${K37_N:-16,19,20} --rounds 3 \
          --variants \"\$K37_VARIANTS\" -o \$OUT/cst-k37.json; echo exit \$?" ;;
    cst-sweep37) run cst-sweep37 200 bash -c "timeout 120 python3 tools/cst_variants.py --n 19,20 --blocks 64,128,256 \
          --rounds 3 -o \$OUT/cst-sweep37-block.json; echo exit \$?;
        timeout 70 python3 tools/cst_variants.py --n 20 --depth 3,5 --rounds 3 -o \$OUT/cst-sweep37-depth.json; echo exit \$?" ;;
    cst-whole21) run cst-whole21 280 bash -c "timeout 275 python3 tools/cdp_cst_table.py --n 21 --case fast --case graph-cst \
          --repeats 7 --timeout 40 --budget-s 250 --out \$OUT/cst-whole21; echo exit \$?" ;;
    cst-22b) run cst-22b 280 bash -c "timeout 275 python3 tools/cdp_cst_table.py --n 22 --case fast --case graph-cst \
          --timeout 130 --budget-s 140 --out \$OUT/cst-22b; echo exit \$?" ;;
    cdp-cst-big) run cdp-cst-big 540 bash -c "timeout 535 python3 tools/cdp_cst_table.py --n 20:22 --case cdp-cst \
          --timeout 470 --budget-s 120 --out \$OUT/cdp-cst-big; echo exit \$?" ;;
    cst-open) run cst-open 120 bash -c "for s in graph-cst fast; do timeout 55 python3 tools/startup_probe.py --open \$s 21 \
          | grep -v importlib | head -75; done" ;;
    cst-carveout) run cst-carveout 100 bash -c "timeout 95 python3 tools/cdp_cst_table.py --n 19:20 --case cdp-cst \
          --case cdp-cst:carveout=100 --case cdp-cst:carveout=0 --timeout 30 --budget-s 80; echo exit \$?" ;;
    bench-profile) rm -rf /tmp/nqprof-bench-profile; run bench-profile 200 bash -c "TIMEFORMAT='pytest took %R s';
        time python3 -m cProfile -o \$OUT/bench-profile.pstats -m pytest bench/ -q -p no:cacheprovider \
          --nq-strategy=fast,feinbube,dp3,cdp-bp,queue,graph-cst --nq-n=12:14 --durations=0 \
          --benchmark-storage=/tmp/nqprof-bench-profile --benchmark-autosave | tail -25" ;;
    cdp-cst-22) run cdp-cst-22 375 bash -c "
        timeout 370 python3 tools/cdp_cst_table.py --n 22 --case fast --case cdp-cst --case graph-cst --timeout 140 \
          --budget-s 250; echo exit \$?" ;;
    carneiro-plan) run carneiro-plan 120 bash -c "nqprof plan 18 -s cdp-bp && nqprof plan 18 -s cdp-dp3 &&
        nqprof plan 15 -s dp1 -p z=3 && nqprof plan 16 -s dp1 -p z=3 -p depth=4 && nqprof plan 18 -s dp3 -p depth=3 &&
        nqprof plan 13 -s dp2 -p config=default -p depth=4 -p search=3 -p child_block=32" ;;
    carneiro-verify) run carneiro-verify 590 bash -c "for s in cdp-bp cdp-dp3; do
        nqprof sweep --strategy \$s --n 4:18 --rounds 1 --warmup 0 --timeout 200 -q -o \$OUT/carneiro-verify-\$s.json; done" ;;
    carneiro-chunks) run carneiro-chunks 300 bash -c "
        timeout 100 nqprof solve 15 -s dp1 -p z=3 --rounds 1 --warmup 0 --timeout 90 -q; echo exit \$?;
        timeout 150 nqprof solve 15 -s dp1 -p z=3 -p stream=default --rounds 1 --warmup 0 --timeout 140 -q; echo exit \$?" ;;
    carneiro-chunks-dp1-16) run carneiro-chunks-dp1-16 440 nqprof solve 16 -s dp1 -p z=3 --rounds 1 --warmup 0 --timeout 420 ;;
    carneiro-chunks-dp3-18) run carneiro-chunks-dp3-18 300 nqprof solve 18 -s dp3 -p depth=3 --rounds 1 --warmup 0 --timeout 280 ;;
    carneiro-default) run carneiro-default 400 bash -c "
        timeout 120 nqprof solve 13 -s dp2 -p config=default -p depth=4 -p search=3 -p child_block=32 -q; echo exit \$?;
        timeout 120 nqprof solve 13 -s dp3 -p config=default -q; echo exit \$?;
        timeout 120 nqprof solve 13 -s cdp-dp3 -p config=default -q; echo exit \$?" ;;
    carneiro-speed) run carneiro-speed 500 nqprof sweep --strategy cdp-bp,feinbube,bp-dfs --n 17:18 --rounds 3 --warmup 1 \
        --timeout 150 -q -o "$OUT/carneiro-speed.json" ;;
    carneiro-tune) run carneiro-tune 500 bash -c "nqprof sweep --strategy cdp-bp --n 17 --param cdp-bp.depth=4,5,6 \
        --param cdp-bp.depth2=7,8 --param cdp-bp.child_block=64,128,256 --rounds 3 --warmup 1 --timeout 60 -q \
        -o $OUT/carneiro-tune.json && nqprof sweep --strategy cdp-bp --n 16,18 --param cdp-bp.depth=4,5 \
        --param cdp-bp.child_block=64 --rounds 3 --warmup 1 --timeout 60 -q -o $OUT/carneiro-tune-18.json" ;;
    carneiro-serial) run carneiro-serial 400 python3 -m pytest bench/ --nq-strategy=serial --nq-n=17:18 --nq-rounds=1 \
        --nq-warmup=0 --benchmark-autosave --benchmark-storage="$OUT/serial-history" -q -rs -p no:cacheprovider ;;
    carneiro-table2) run carneiro-table2 590 nqprof report carneiro table2 --history docs/results/benchmarks \
        --rounds 1 --warmup 0 --timeout 150 -o "$OUT/carneiro-table2.md" --figure "$OUT/carneiro_speedup.png" ;;
    carneiro-memcheck|carneiro-racecheck) tool=${stage#carneiro-}
      run "$stage" 590 bash -c "for s in $cdp_strategies; do echo \"--- $tool \$s N=10\";
          timeout 150 compute-sanitizer --tool $tool $([ "$tool" = racecheck ] && echo --racecheck-report all) \
            --target-processes all nqprof solve 10 -s \$s --rounds 1 --warmup 0 --timeout 140 -q 2>&1 \
            | grep -v -E '^=+ *$' | head -60; done" ;;
    smoke) run smoke 300 bash -c "nqprof env | grep -E 'gpu|driver|toolkit|pycuda'; for a in '12 -s fast' '10 -s dp2' \
        '12 -s feinbube' '12 -s devgraph' '12 -s queue' '12 -s cdp-bp' '9 -s serial'; do timeout 120 nqprof solve \$a -r 3 -q \
        | grep -E 'strategy|count|GPU time|memory|note'; done" ;;
    fast22-whole) run fast22-whole 300 bash -c "TIMEFORMAT='whole %R s'; time (timeout 280 nqprof solve 22 -s fast -r 1 -w 0 \
        --timeout 270 | grep -E 'count|GPU time|process|note')" ;;
    interrupt) run interrupt 200 bash -c "
        echo '--- Ctrl-C (SIGINT to the process group, from a Python driver: a shell would start a background job with
          SIGINT ignored) 3 s into nqprof solve 21 -s fast';
        python3 -c \"
import os, signal, subprocess, time
smi = ['nvidia-smi', '--query-compute-apps=pid,used_memory', '--format=csv,noheader']
p = subprocess.Popen(['nqprof', 'solve', '21', '-s', 'fast', '-r', '1', '-w', '0'], start_new_session=True,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
time.sleep(3)
print(subprocess.run(smi, capture_output=True, text=True).stdout.strip(), '(counting)')
t = time.monotonic(); os.killpg(p.pid, signal.SIGINT); out, err = p.communicate(); took = time.monotonic() - t
print(f'exit {p.returncode} after {took:.3f} s; stdout {out!r}; stderr {err!r}')
time.sleep(0.5)
print('GPU compute processes left:', repr(subprocess.run(smi, capture_output=True, text=True).stdout.strip()))\";
        echo '--- kill -9 of the parent 3 s into nqprof solve 21 -s fast';
        nqprof solve 21 -s fast -r 1 -w 0 > /dev/null 2>&1 & P=\$!; sleep 3;
        W=\$(ps -o pid= --ppid \$P | tr '\\n' ' '); echo \"parent \$P, its children: \$W\"; nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader;
        kill -9 \$P; sleep 1; echo 'one second later, processes left of those:'; for w in \$W; do ps -o pid=,cmd= -p \$w; done;
        echo 'GPU compute processes left:'; nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader; echo done" ;;
    shared) run shared 200 bash -c "
        echo '--- nqprof solve 18 -s fast while another nqprof counts N=21 on the same GPU';
        nqprof solve 21 -s fast -r 1 -w 0 > /dev/null 2>&1 & sleep 2;
        nqprof solve 18 -s fast -r 5 -o \$OUT/shared-18.json 2>&1 | grep -E 'GPU time|warning|clocks'; wait;
        python3 -c \"import json; r=json.load(open('\$OUT/shared-18.json')); print('record:', r['conditions']['gpu'].get('other_processes'), 'other process(es), utilization', r['conditions']['gpu'].get('utilization_pct'))\";
        echo '--- the same alone'; nqprof solve 18 -s fast -r 5 2>&1 | grep -E 'GPU time|warning|clocks'" ;;
    shared-compare) rm -rf /tmp/nqprof-shared; run shared-compare 300 bash -c "
        B='python3 -m pytest bench/ -q -p no:cacheprovider --nq-strategy=fast --nq-n=16:18 --benchmark-storage=/tmp/nqprof-shared';
        echo '--- alone'; \$B --benchmark-save=alone 2>&1 | tail -4;
        nqprof solve 22 -s fast -r 1 -w 0 > /dev/null 2>&1 & P=\$!; sleep 3;
        echo '--- while another nqprof counts N=22 on the same GPU'; \$B --benchmark-save=shared 2>&1 | tail -6;
        kill \$P; wait; echo '--- nqprof compare 0001 0002 (alone, then shared)';
        nqprof compare 0001 0002 --storage /tmp/nqprof-shared 2>&1 | tail -20" ;;
    solve-quick) run solve-quick 200 bash -c "TIMEFORMAT='whole %R s'; for n in 12 12 12 16 20 20; do
        time (timeout 60 nqprof solve \$n -s fast -r 1 -w 0 | grep -E 'GPU time|process|note'); done;
        python3 -m cProfile -s cumtime -m nqprof solve 12 -s fast -r 1 -w 0 -q | grep -A45 'Ordered by' | cut -c1-150;
        PYTHONPROFILEIMPORTTIME=1 nqprof solve 12 -s fast -r 1 -w 0 -q 2> \$OUT/importtime-12.txt >/dev/null;
        sort -t'|' -k2 -n -r \$OUT/importtime-12.txt | head -25" ;;
    solve-times) run solve-times 580 bash -c "TIMEFORMAT='%R'; for n in \$(seq 12 21); do for i in 1 2 3; do
        s=\$( { time timeout 120 nqprof solve \$n -s fast -r 1 -w 0 > /tmp/solve-\$n-\$i.txt 2>&1; } 2>&1 );
        k=\$(grep -oP 'GPU time +\\K[0-9.]+ [mu]?s' /tmp/solve-\$n-\$i.txt); echo \"N=\$n run \$i: whole \$s s, kernel \$k\";
        done; grep -E 'count|note' /tmp/solve-\$n-1.txt; done" ;;
    bench-time) rm -rf /tmp/nqprof-bench-time
      run bench-time 590 bash -c "TIMEFORMAT='pytest bench/ took %R s'; time python3 -m pytest bench/ -q -p no:cacheprovider \
          --durations=0 --benchmark-autosave --benchmark-storage=/tmp/nqprof-bench-time | tail -135;
          tar czf \$OUT/bench-time.tar.gz -C /tmp/nqprof-bench-time ." ;;
    cst-whole) run cst-whole 300 bash -c "TIMEFORMAT='whole %R s'; for a in 'fast 20' 'graph-cst 20' 'cdp-cst 20' \
          'fast 21' 'graph-cst 21'; do set -- \$a; echo \"--- nqprof solve \$2 -s \$1 -r 1 -w 0\";
          time (timeout 90 nqprof solve \$2 -s \$1 -r 1 -w 0 | grep -E 'GPU time|process|note'); done;
        for s in graph-cst fast; do timeout 60 python3 tools/startup_probe.py --open \$s 21 | head -45; done" ;;
    bench-aa) rm -rf /tmp/nqprof-bench-aa
      run bench-aa 590 bash -c "for run in A B; do TIMEFORMAT=\"pytest bench/ (\$run) took %R s\";
          time python3 -m pytest bench/ -q -p no:cacheprovider --benchmark-save=\$run --benchmark-storage=/tmp/nqprof-bench-aa | tail -2; done;
          nqprof compare 0001 0002 --storage /tmp/nqprof-bench-aa | tail -140" ;;
    small-aa) rm -rf /tmp/nqprof-small-aa; run small-aa 400 bash -c "for run in 1 2 3; do python3 -m pytest bench/ -q \
          -p no:cacheprovider --nq-strategy=${AA_STRATEGIES:-fast} --nq-n=${AA_N:-8:13} --benchmark-autosave \
          --benchmark-storage=/tmp/nqprof-small-aa | tail -1; done; tar -C /tmp -czf \$OUT/small-aa.tar.gz nqprof-small-aa;
          nqprof compare 0001 0002 --storage /tmp/nqprof-small-aa | tail -40; nqprof compare 0002 0003 --storage /tmp/nqprof-small-aa | tail -40" ;;
    rot-aa) rm -rf /tmp/nqprof-rot-aa
      run rot-aa 590 bash -c "for run in A B; do gate=; [ \$run = B ] && gate='--benchmark-compare --benchmark-compare-fail=median:5%';
          TIMEFORMAT=\"pytest bench/ (\$run) took %R s\";
          time python3 -m pytest bench/ -q -p no:cacheprovider --nq-strategy=${AA_STRATEGIES:-$GPU_STRATEGIES} --nq-n=${AA_N:-8:13} \
            --benchmark-autosave --benchmark-storage=/tmp/nqprof-rot-aa \$gate > /tmp/rot-aa-\$run.txt 2>&1;
          echo \"run \$run: exit \$?\"; grep -E '^FAILED|Performance has regressed|^nqprof: ' /tmp/rot-aa-\$run.txt | head -20; tail -1 /tmp/rot-aa-\$run.txt; done;
          cp /tmp/rot-aa-B.txt \$OUT/; tar -C /tmp -czf \$OUT/rot-aa.tar.gz nqprof-rot-aa;
          nqprof compare 0001 0002 --storage /tmp/nqprof-rot-aa | tail -100" ;;
    bench-aa-gate) rm -rf /tmp/nqprof-aa-gate
      run bench-aa-gate 590 bash -c "for run in A B; do gate=; [ \$run = B ] && gate='--benchmark-compare --benchmark-compare-fail=median:5%';
          TIMEFORMAT=\"pytest bench/ (\$run) took %R s\";
          time python3 -m pytest bench/ -q -p no:cacheprovider --benchmark-autosave --benchmark-storage=/tmp/nqprof-aa-gate \$gate > /tmp/aa-gate-\$run.txt 2>&1;
          echo \"run \$run: exit \$?\"; grep -E '^FAILED|Performance has regressed|^nqprof: ' /tmp/aa-gate-\$run.txt | head -20; tail -1 /tmp/aa-gate-\$run.txt; done;
          cp /tmp/aa-gate-B.txt \$OUT/; tar -C /tmp -czf \$OUT/bench-aa-gate.tar.gz nqprof-aa-gate;
          nqprof compare 0001 0002 --storage /tmp/nqprof-aa-gate | tail -160" ;;
    bench-prepost) rm -rf /tmp/nqprof-prepost; run bench-prepost 595 bash -c "TIMEFORMAT='pytest bench/ took %R s';
          time NQPROF_SITE=/tmp/nqprof-site-pre NQPROF_WHEELHOUSE=\$PWD/\${NQPROF_WHEELHOUSE:-.gpuhost/wheelhouse} \
            .stage/pre/tools/gpuhost.sh python3 -m pytest bench/ -q -p no:cacheprovider --benchmark-save=pre \
            --benchmark-storage=/tmp/nqprof-prepost | tail -1;
          for run in A B; do time python3 -m pytest bench/ -q -p no:cacheprovider --benchmark-save=\$run \
            --benchmark-storage=/tmp/nqprof-prepost | tail -1; done;
          echo '--- compare pre A'; nqprof compare 0001 0002 --storage /tmp/nqprof-prepost | tail -150;
          echo '--- compare A B'; nqprof compare 0002 0003 --storage /tmp/nqprof-prepost | tail -150" ;;
    aa-queue) rm -rf /tmp/nqprof-aa-queue; run aa-queue 300 bash -c "for mode in \${AA_MODES:-init late init late init late}; do
          NQPROF_PREPARED_CUDA=\$mode python3 -m pytest bench/ -q -p no:cacheprovider --nq-strategy=queue,feinbube --nq-n=12:16 \
            --benchmark-save=\$mode --benchmark-storage=/tmp/nqprof-aa-queue > /dev/null; done;
          for pair in '0001 0003' '0003 0005' '0002 0004' '0004 0006'; do echo \"--- compare \$pair (runs: \${AA_MODES:-init late init late init late})\";
            nqprof compare \$pair --storage /tmp/nqprof-aa-queue 2>/dev/null | grep -E '^(queue|feinbube) '; done" ;;
    dask-one) run dask-one 300 bash -c "TIMEFORMAT='whole %R s'; time nqprof solve 21 -s fast -r 1 -w 0 | grep -E 'count|GPU time|process';
          nqprof solve 21 -s fast --cluster local --workers 1 --tasks 8 --json > \$OUT/dask-one-N21.json 2> \$OUT/dask-one-N21.log; tail -16 \$OUT/dask-one-N21.log;
          python3 -c \"import json; r=json.load(open('\$OUT/dask-one-N21.json')); print('wall', r['wall_s'], 'setup', r['setup_s'], 'verified', r['verified'], [(w['gpu_s'], w['busy_s']) for w in r['workers']])\"" ;;
    startup) run startup 420 bash -c "python3 tools/startup_probe.py --repeats 3;
        TIMEFORMAT='whole %R s'; for n in 12 12 12 16 20; do echo \"--- nqprof solve \$n -s fast -r 1 -w 0\";
          time (timeout 60 nqprof solve \$n -s fast -r 1 -w 0 | grep -E 'count|GPU time|note'); done;
        python3 -X importtime -m nqprof strategies 2> \$OUT/importtime.txt >/dev/null;
        sort -t'|' -k2 -n -r \$OUT/importtime.txt | head -15;
        python3 tools/startup_probe.py --open fast 20;
        timeout 120 python3 -m pytest bench/ --nq-strategy=fast,feinbube --nq-n=10:11 --durations=0 -q -p no:cacheprovider | tail -25" ;;
    *) echo "unknown stage $stage" ;;
  esac
done
