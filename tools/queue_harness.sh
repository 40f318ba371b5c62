#!/bin/bash
# Build tools/queue_harness.cu against kernels/ and run stages of it on a GPU host:
#   tools/queue_harness.sh LOGDIR verify time sweep tests bench
# Each stage runs under `timeout`; its full output goes to LOGDIR/<stage>.log.
set -u
cd "$(dirname "$0")/.."
LOG=${1:?usage: queue_harness.sh LOGDIR STAGE...}; shift
mkdir -p "$LOG"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,driver_version --format=csv | tee "$LOG/smi.txt"
B="nvcc -O3 -arch=sm_90 -std=c++17 -lineinfo -Ikernels -DNQ_N=20 -DNQ_BLOCK=64"
H=build/queue_harness
mkdir -p build
$B -Xptxas -v -o $H tools/queue_harness.cu > "$LOG/build.log" 2>&1 || { tail -30 "$LOG/build.log"; exit 1; }
for stage in "$@"; do
  echo "=== $stage"
  case $stage in
    tests)  timeout 90 $H tests > "$LOG/tests.log" 2>&1; grep -v "^PASS" "$LOG/tests.log"; grep -c "^PASS" "$LOG/tests.log" ;;
    verify) timeout 60 $H solve 0 4 18 1 6 128 0 4096 6 22 solve 1 4 18 1 6 128 0 4096 6 22 > "$LOG/verify.log" 2>&1
            grep -E "WRONG|FAILED|DONE|error" "$LOG/verify.log" ;;
    time)   timeout 70 $H solve 0 19 19 3 6 128 0 4096 6 22 solve 0 20 20 1 6 128 0 4096 6 22 \
                          solve 1 19 19 3 6 128 0 4096 6 22 solve 1 20 20 1 6 128 0 4096 6 22 \
                          fein 19 3 fein 20 1 > "$LOG/time.log" 2>&1; grep -E "SOLVE|TIME|DONE|error" "$LOG/time.log" ;;
    sweep)  for q in 0 1; do for x in "6 64 0 4096 6" "6 128 0 4096 4" "6 128 0 4096 8" "6 128 0 65536 6" "6 128 4 4096 6"; do
              timeout 30 $H solve $q 19 19 1 $x 22 | grep TIME; done; done | tee "$LOG/sweep.log" ;;
    bench)  timeout 85 $H bench 3 2097152 > "$LOG/bench.log" 2>&1; grep -E "FAIL|stuck|DONE|error" "$LOG/bench.log" ;;
  esac
done
