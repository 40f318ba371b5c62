#!/usr/bin/env bash
# The multi-GPU check of `nqprof solve --cluster` on a host with two or more GPUs: for each
# N, the same plan (--tasks) on one GPU worker, then on every GPU; both counts verified;
# the JSON records and logs go to $OUT (default ./out); the last line of each N gives the
# speedup, wall time on one GPU / wall time on all of them.
#
#   tools/cluster_gpu_check.sh STRATEGY N [N...]      e.g. tools/cluster_gpu_check.sh feinbube 21 22
#
# Needs the Dask wheels (dask, distributed and the dependencies the host lacks) in the
# wheelhouse that tools/gpuhost.sh installs from. Environment: TASKS (default 8), GPUS
# (default: every GPU nvidia-smi lists), STEP_TIMEOUT (seconds one task may take, default
# 1800), PARAMS (extra -p KEY=VALUE arguments).
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
strategy=$1
shift
tasks=${TASKS:-8}
gpus=${GPUS:-$(nvidia-smi -L | grep -c '^GPU ')}
for n in "$@"; do
  for workers in 1 "$gpus"; do
    name="cluster-$strategy-N$n-w$workers"
    echo "=== $name"
    # shellcheck disable=SC2086
    tools/gpuhost.sh nqprof solve "$n" -s "$strategy" ${PARAMS:-} --cluster local --workers "$workers" \
      --tasks "$tasks" --timeout "${STEP_TIMEOUT:-1800}" --json >"$OUT/$name.json" 2>"$OUT/$name.log"
    echo "=== $name exit $?"
    tail -n 3 "$OUT/$name.log"
  done
  python3 - "$OUT/cluster-$strategy-N$n-w1.json" "$OUT/cluster-$strategy-N$n-w$gpus.json" <<'PY'
import json, sys
try:
    one, all_ = (json.load(open(p)) for p in sys.argv[1:3])
except (OSError, ValueError) as exc:
    sys.exit(f"no record to compare ({exc})")
for r in (one, all_):
    gpus = ", ".join(f"GPU {w['gpu']}: {w['tasks']} tasks, busy {w['busy_s']:.3f} s" for w in r["workers"])
    print(f"N={r['n']} {r['strategy']} {len(r['workers'])} workers: count {r['count']} verified={r['verified']}, "
          f"wall {r['wall_s']:.3f} s, balance {r['load_balance']:.3f}, sum of task times / wall "
          f"{r['speedup']:.2f}x ({gpus})")
print(f"N={one['n']} speedup over one GPU: {one['wall_s'] / all_['wall_s']:.2f}x "
      f"({one['wall_s']:.3f} s / {all_['wall_s']:.3f} s, same {len(one['tasks'])} tasks)")
PY
done
