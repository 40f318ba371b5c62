#!/usr/bin/env bash
# Device graph launch beside CDP (docs/devgraph.md) on a GPU host: each stage under a timeout,
# logs and JSON records in $OUT/devgraph (default /tmp/out/devgraph).
#
#   tools/devgraph_gpu.sh [probe] [verify] [compare] [launch]     (default: probe)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/out}/devgraph
mkdir -p "$out"
export PYTHONUNBUFFERED=1 NQPROF_TIMEOUT=${NQPROF_TIMEOUT:-240}
run() { tools/gpuhost.sh "$@"; }
stages=${*:-probe}

for stage in $stages; do
  case $stage in
  probe)
    {
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
      python3 -c "import cuda.bindings; print('cuda-bindings', cuda.bindings.__version__)"
      for d in host while device; do
        timeout 120 tools/gpuhost.sh nqprof solve 8 -s devgraph -p driver=$d -r 2 -w 1 -q
        timeout 120 tools/gpuhost.sh nqprof solve 12 -s devgraph -p driver=$d -r 3 -w 1 -q
      done
      timeout 240 tools/gpuhost.sh nqprof characterize launch --modes graph-ff,graph-tail,fire-and-forget \
        --counts 1,8,32,128,512,2K --repeats 3 --json "$out/launch-probe.json" -q
    } 2>&1 | tee "$out/probe.log"
    ;;
  verify)
    # N=4..18, each driver; a wrong count is an error (exit code 1), never a timing.
    {
      for n in $(seq 4 18); do
        for d in host while device; do
          timeout 120 tools/gpuhost.sh nqprof solve $n -s devgraph -p driver=$d -r 1 -w 0 -q --json > "$out/verify-$n-$d.json" \
            && python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[2], r['n'], r['count'], 'verified' if r['verified'] else 'WRONG', '%.3f ms' % (r['gpu_s']*1e3))" "$out/verify-$n-$d.json" "$d" \
            || echo "devgraph N=$n driver=$d FAILED (rc $?)"
        done
      done
    } 2>&1 | tee "$out/verify.log"
    ;;
  compare)
    # The same generations at N=12..18 under the three drivers, beside the best CDP strategy (cdp-bp)
    {
      nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,temperature.gpu --format=csv
      for n in $(seq 12 18); do
        for d in host while device; do
          timeout 200 tools/gpuhost.sh nqprof solve $n -s devgraph -p driver=$d -r 5 -w 1 -q --json > "$out/compare-$n-devgraph-$d.json" \
            || echo "devgraph N=$n driver=$d FAILED"
        done
        timeout 200 tools/gpuhost.sh nqprof solve $n -s cdp-bp -r 5 -w 1 -q --json > "$out/compare-$n-cdp-bp.json" || echo "cdp-bp N=$n FAILED"
      done
      nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,temperature.gpu --format=csv
      tools/gpuhost.sh python3 -m nqprof.characterize.devgraph_compare "$out"/compare-*.json -o "$out/compare.md" \
        --figure "$out/compare.png"
    } 2>&1 | tee "$out/compare.log"
    ;;
  launch)
    {
      timeout 420 tools/gpuhost.sh nqprof characterize launch \
        --counts 1,2,4,8,16,32,64,128,256,512,1K,4K,16K,64K,256K --repeats 5 --json "$out/launch.json" \
        --figure "$out/launch.png" -q
    } 2>&1 | tee "$out/launch.log"
    ;;
  *) echo "unknown stage $stage"; exit 2 ;;
  esac
done
