#!/usr/bin/env bash
# Build nqprof on a GPU host and run the named stages, each under a timeout, logging to
# $OUT (default ./out). Used to produce the GPU results under docs/results.
#
#   tools/gpu_check.sh env tests feinbube-tune cpu bench profile
#
# Stages:
#   env            nqprof env
#   tests          the GPU-marked tests (pytest -m gpu)
#   feinbube-steps every optimisation step of feinbube, N=16..19, verified, 3 rounds
#   feinbube-tune  depth x block for the best step at N=18 and 19
#   cpu            serial vs a recursive C reference (N=15, 16); multicore speedup at N=17
#   cdp            the CDP strategies, N=4..16 verified, and timings next to feinbube/serial
#   bench          pytest bench/ --benchmark-autosave (the whole suite)
#   profile        nqprof profile solve 16 --strategy feinbube, and a CDP strategy
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
run() {  # run NAME SECONDS COMMAND...: log to $OUT/NAME.log, never stop the script
  local name=$1 secs=$2
  shift 2
  echo "=== $name: $*"
  timeout --kill-after=10 "$secs" tools/gpuhost.sh "$@" 2>&1 | tee "$OUT/$name.log"
  echo "=== $name exit ${PIPESTATUS[0]}"
}
for stage in "$@"; do
  case $stage in
    env) run env 120 nqprof env ;;
    tests) run tests 500 python3 -m pytest tests -m gpu -q -rs -p no:cacheprovider ;;
    feinbube-steps) run feinbube-steps 500 python3 tools/sweep.py feinbube --n 16:19 \
        --param opt=local,shared-stack,shared-all,extern,rows-left --repeats 3 --warmup 1 --json "$OUT/feinbube-steps.json" ;;
    feinbube-tune) run feinbube-tune 500 python3 tools/sweep.py feinbube --n 18:19 \
        --param depth=5,6,7 --param block=64,128,256 --repeats 3 --warmup 1 --json "$OUT/feinbube-tune.json" ;;
    cpu) run cpu 500 bash -c "python3 bench/cpu_reference.py 15 16 --repeats 5 && python3 bench/cpu_reference.py 17 --multicore --repeats 3" ;;
    cdp) run cdp 560 bash -c "for s in dp1 dp2 dp3 dpswap; do python3 tools/sweep.py \$s --n 4:16 --repeats 1 --warmup 0 --timeout 60; done" ;;
    bench) run bench 580 python3 -m pytest bench/ --benchmark-autosave --benchmark-storage="$OUT/benchmarks" -rs -q -p no:cacheprovider ;;
    profile) run profile 300 bash -c "cd \$OUT && nqprof profile --output \$OUT/feinbube16 -- solve 16 --strategy feinbube --repeats 2" ;;
    *) echo "unknown stage $stage" ;;
  esac
done
