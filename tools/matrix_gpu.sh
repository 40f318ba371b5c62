#!/usr/bin/env bash
# One toolkit of the matrix on a GPU host without a package index, from the repository root,
# with a folder that tools/matrix_wheelhouse.sh built carried beside it:
#
#   tools/matrix_gpu.sh .matrix/carry-cuda12.4
#
# 1. tox from the folder's wheels (pip --target, no index);
# 2. `tox -e cudaX.Y` offline: the toolkit unpacked from the folder (NQPROF_TOOLKIT_ARCHIVE),
#    pip reading only the folder's wheels (PIP_NO_INDEX, PIP_FIND_LINKS), nqprof installed
#    beside the host's numpy, pandas, pytest ... and found by the environment's commands
#    (PYTHONPATH; --skip-pkg-install), every command run even when
#    one fails (ignore_errors): every kernel built, the GPU tests (pytest tests -m gpu), the
#    fixed benchmark set (feinbube, fast, cdp-bp, dp3, devgraph, queue at N=12..16, or
#    $MATRIX_BENCH_ARGS) saved to this toolkit's own history (.benchmarks/cudaX.Y);
# 3. nqprof characterize launch and reserve, short, with this toolkit's build;
# 4. into $OUT (default ./out), at most 6 files: summary-<gpu>-cudaX.Y.txt (the lines to read),
#    history-<gpu>-cudaX.Y.tar.gz (the benchmark storage, for nqprof compare and nqprof matrix
#    --history), characterize-<gpu>-cudaX.Y.tar.gz, resources-cudaX.Y.json,
#    logs-<gpu>-cudaX.Y.tar.gz (every log), and exit codes in the summary.
#
# Every step runs under `timeout`; the whole takes about 6 minutes on an H200 (GPU tests about
# 190 s, 30 benchmark cases about 60 s) and at most about 9 (MATRIX_TOX_TIMEOUT, default 420,
# bounds step 2). MATRIX_GPU_TEST_ARGS replaces the GPU tests' pytest options (default
# "-q -rs -p no:cacheprovider --durations=10"; e.g. add -x, or --deselect a test).
set -uo pipefail
cd "$(dirname "$0")/.."
carry=${1:?usage: tools/matrix_gpu.sh CARRY_FOLDER (made by tools/matrix_wheelhouse.sh)}
carry=$(cd "$carry" && pwd)
version=$(cat "$carry/TOOLKIT")
env=cuda$version
export OUT=${OUT:-$PWD/out}
gpu=$(timeout 30 nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
slug=$(echo "${gpu:-nogpu}" | sed -e 's/^NVIDIA //' | tr 'A-Z ' 'a-z-' | tr -cd 'a-z0-9.-')
tag=$slug-$env
work=$OUT/work-$tag
rm -rf "$work" && mkdir -p "$work/logs" "$work/characterize"
summary=$work/summary-$tag.txt
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
run() {  # run NAME SECONDS COMMAND...: log to logs/NAME.log, exit code into the summary
  local name=$1 secs=$2
  shift 2
  echo "=== $name: $*"
  local t0=$SECONDS
  timeout --kill-after=10 "$secs" "$@" > "$work/logs/$name.log" 2>&1
  local rc=$?
  say "=== $name: exit $rc in $((SECONDS - t0)) s$([ $rc -eq 124 ] && echo " (timed out after $secs s)")"
  return $rc
}

say "toolkit $version from $carry; GPU ${gpu:-none}; $(timeout 30 nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1 | sed 's/^/driver /')"
say "python $(python3 -c 'import sys; print(sys.version.split()[0])'); commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"

# 1. tox, offline
export PIP_NO_INDEX=1 PIP_FIND_LINKS=$carry/wheels PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_CONFIG_FILE=/dev/null
toxsite=/tmp/nqprof-tox
if ! PYTHONPATH=$toxsite timeout 60 python3 -m tox --version > /dev/null 2>&1; then
  rm -rf "$toxsite"
  run tox-install 60 python3 -m pip install -q --no-index --find-links "$carry/wheels" --target "$toxsite" tox
fi
say "$(PYTHONPATH=$toxsite timeout 60 python3 -m tox --version 2>&1 | head -1)"

# 2. the tox environment: build, GPU tests, benchmarks
rm -rf ".benchmarks/$env"
export NQPROF_TOOLKIT_ARCHIVE=$carry/toolkit.tar.xz
export NQPROF_BENCH_ARGS=${MATRIX_BENCH_ARGS:---nq-strategy=feinbube,fast,cdp-bp,dp3,devgraph,queue --nq-n=12:16}
export NQPROF_GPU_TEST_ARGS=${MATRIX_GPU_TEST_ARGS:--q -rs -p no:cacheprovider --durations=10}
# nqprof (built here), PyCUDA and nvtx go beside the host's numpy, pytest and pytest-benchmark,
# which live in a virtual environment of the host's (python3's): a tox environment, made by
# virtualenv from the base interpreter, cannot see those, and pip has no index to fetch them.
# So tox makes its environment without installing the package (--skip-pkg-install) and its
# commands find nqprof and the rest through PYTHONPATH and PATH.
site=/tmp/nqprof-matrix-site
rm -rf "$site"
run nqprof-install 180 python3 -m pip install -q --no-deps --no-compile \
  --target "$site" "$carry"/wheels/{pycuda,nvtx,pytools,platformdirs,mako,siphash24}-*.whl .
hostsite=$(python3 -c 'import numpy, os; print(os.path.dirname(os.path.dirname(numpy.__file__)))')
run tox "${MATRIX_TOX_TIMEOUT:-420}" env PYTHONPATH="$toxsite:$site:$hostsite" PATH="$site/bin:$PATH" \
  python3 -m tox -e "$env" --skip-pkg-install -x "testenv:$env.pass_env+=PYTHONPATH" \
  -x "testenv:$env.allowlist_externals+=nqprof" \
  -x "testenv:$env.ignore_errors=true"
grep -E "^CUDA |kernel builds|skipped:|passed|failed|error|$env: (OK|FAIL)" "$work/logs/tox.log" | tail -15 | tee -a "$summary"

# 3. characterize, short, with this toolkit (nqprof as installed above, the tox environment's
#    toolkit root)
nq=(env PYTHONPATH="$site" python3 -m nqprof)
export NQPROF_CUDA_HOME=$PWD/.tox/$env/cuda
c=$work/characterize
if [ -d "$NQPROF_CUDA_HOME" ]; then
  run characterize-launch 60 "${nq[@]}" characterize launch --counts 1K,16K --modes default,own,fire-and-forget,tail \
    --rounds 5 --warmup 1 --timeout 60 -o "$c/launch.json" -o "$c/launch.md" -q
  cat "$c/launch.md" 2>/dev/null | tee -a "$summary"
  run characterize-reserve 60 "${nq[@]}" characterize reserve --pending 0,16384,262144 --heap-mib 8 \
    --rounds 3 --warmup 1 --timeout 60 -o "$c/reserve.json" -o "$c/reserve.md" -q
  cat "$c/reserve.md" 2>/dev/null | tee -a "$summary"
  # the benchmark history as nqprof reads it
  run history 20 "${nq[@]}" history ".benchmarks/$env"
  grep -E "^ *[0-9]+ +\S+ +(feinbube|fast|cdp-bp|dp3|devgraph|queue) +1[2-6] " "$work/logs/history.log" \
    | head -40 | tee -a "$summary"
else
  say "no $NQPROF_CUDA_HOME: the tox environment made no toolkit (see logs/tox.log)"
fi

# 4. at most 6 files into $OUT
cp ".tox/resources-$env.json" "$OUT/resources-$env.json" 2>/dev/null
if [ -d ".benchmarks/$env" ]; then
  mkdir -p "$work/history" && cp -r ".benchmarks/$env" "$work/history/$tag"
  tar -czf "$OUT/history-$tag.tar.gz" -C "$work/history" "$tag"
fi
tar -czf "$OUT/characterize-$tag.tar.gz" -C "$work" characterize
tar -czf "$OUT/logs-$tag.tar.gz" -C "$work" logs
mv "$summary" "$OUT/summary-$tag.txt"
rm -rf "$work"
ls -la "$OUT"
