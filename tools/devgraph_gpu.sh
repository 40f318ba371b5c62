#!/usr/bin/env bash
# Device graph launch beside CDP (docs/devgraph.md) on a GPU host: each stage under a timeout,
# logs and JSON records in /tmp/devgraph, then the logs, tables and figures copied to
# $OUT/devgraph and everything packed in $OUT/devgraph.tgz (default OUT: /tmp/out).
#
#   tools/devgraph_gpu.sh [probe] [verify] [compare] [launch] [tail]     (default: probe)
set -uo pipefail
cd "$(dirname "$0")/.."
out=/tmp/devgraph
dest=${OUT:-/tmp/out}
mkdir -p "$out" "$dest/devgraph"
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
    # The same generations at N=12..18 under the three drivers, beside the best CDP strategy (cdp-bp) and
    # the host-seeded kernel (feinbube)
    {
      nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,temperature.gpu --format=csv
      for n in $(seq 12 18); do
        for d in host while device; do
          timeout 200 tools/gpuhost.sh nqprof solve $n -s devgraph -p driver=$d -r 5 -w 1 -q --json > "$out/compare-$n-devgraph-$d.json" \
            || echo "devgraph N=$n driver=$d FAILED"
        done
        for s in cdp-bp feinbube; do
          timeout 200 tools/gpuhost.sh nqprof solve $n -s $s -r 5 -w 1 -q --json > "$out/compare-$n-$s.json" || echo "$s N=$n FAILED"
        done
      done
      nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,temperature.gpu --format=csv
      tools/gpuhost.sh python3 -m nqprof.characterize.devgraph_compare "$out"/compare-*.json -o "$out/compare.md" \
        --figure "$out/compare.png"
    } 2>&1 | tee "$out/compare.log"
    ;;
  launch)
    {
      timeout 290 tools/gpuhost.sh nqprof characterize launch --timeout 45 \
        --counts 1,2,4,8,32,120,128,512,2K,16K,256K --repeats 5 --json "$out/launch.json" \
        --figure "$out/launch.png" -q
    } 2>&1 | tee "$out/launch.log"
    ;;
  tail)
    # Tail launches of device graphs from more than one thread of a parent: which shapes run,
    # which hang (each variant in its own worker under a 30 s watchdog).
    {
      # python3 -c, not a script on stdin: the watchdog's workers are spawned and re-import __main__
      tools/gpuhost.sh python3 -c "$(cat <<'PY'
from nqprof.characterize.graph_launch import STRATEGY
from nqprof.characterize.probe import run_probe
for count, block, copies in [(1, 128, 1), (2, 128, 1), (2, 1, 2), (2, 1, 1), (2, 128, 2)]:
    p = dict(mode="graph-tail", count=count, block=block, copies=copies, repeats=3, warmup=1)
    try:
        r = run_probe(STRATEGY, p, 30)
        print(f"tail count={count} block={block} copies={copies}: ran, launches={r['launches']} "
              f"failures={r['launch_failures']} first_error={r['first_error']} t1={min(r['t1_s'])*1e3:.3f} ms")
    except Exception as exc:
        print(f"tail count={count} block={block} copies={copies}: {type(exc).__name__}: {str(exc)[:160]}")
PY
)"
      # the cost of a generation under each driver: N=12, 1 and 9 expansion generations before the DFS
      for final in 3 11; do
        for d in host while device; do
          timeout 60 tools/gpuhost.sh nqprof solve 12 -s devgraph -p driver=$d -p final=$final -r 10 -w 1 -q \
            | grep -E "^(params|count|GPU time)"
        done
      done
    } 2>&1 | tee "$out/tail.log"
    ;;
  *) echo "unknown stage $stage"; exit 2 ;;
  esac
done
cp "$out"/*.log "$out"/*.md "$out"/*.png "$dest/devgraph/" 2>/dev/null
tar czf "$dest/devgraph.tgz" -C "$out" .
