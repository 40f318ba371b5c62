#!/usr/bin/env bash
# Build, here (with a package index), what a GPU host without one needs to run the toolkit
# matrix: one folder per CUDA toolkit, carried beside the repository (tools/matrix_gpu.sh runs
# it there), and one for tools/nvbench_compare.py.
#
#   tools/matrix_wheelhouse.sh [TOOLKIT...]      default: 12.4 12.5 13.0
#
#   .matrix/carry-cudaX.Y/toolkit.tar.xz   the CUDA X.Y toolkit stripped to what nvcc needs for
#                                          nqprof's kernels (python -m nqprof.cuda.wheel_toolkit
#                                          pack: nvcc, cicc, ptxas, nvlink, headers,
#                                          libcudadevrt.a), xz -9, reproducible (mtimes 0)
#   .matrix/carry-cudaX.Y/wheels/          Python 3.12 wheels (manylinux or pure): tox and its
#                                          dependencies, setuptools (nqprof's build backend),
#                                          PyCUDA (from $NQPROF_WHEELHOUSE, default
#                                          .gpuhost/wheelhouse: PyPI has no PyCUDA wheel), nvtx,
#                                          dask, distributed and their dependencies; not what the
#                                          host has already (numpy, pandas, matplotlib ...: the
#                                          tox environments see it through system site-packages)
#   .matrix/carry-cudaX.Y/TOOLKIT          the release, e.g. 12.4
#   .matrix/carry-nvbench/wheels/          the cuda-bench wheel (NVBench) and the PyCUDA
#                                          wheelhouse tools/gpuhost.sh installs
#
# Toolkit archives are kept in .matrix/toolkits and made again only when missing. Prints each
# folder's size, and fails if one passes $NQPROF_CARRY_BUDGET_MIB (default 55: a carried call
# takes 64 MiB in all, the repository about 10 of them).
set -euo pipefail
cd "$(dirname "$0")/.."
M=${NQPROF_MATRIX_DIR:-.matrix}
PY=${PYTHON:-python3}
GPUHOST_WHEELS=${NQPROF_WHEELHOUSE:-.gpuhost/wheelhouse}
BUDGET_MIB=${NQPROF_CARRY_BUDGET_MIB:-55}
if [ $# -eq 0 ]; then set -- 12.4 12.5 13.0; fi
if ! ls "$GPUHOST_WHEELS"/pycuda-*-cp312-*.whl >/dev/null 2>&1; then
  echo "no PyCUDA wheel for Python 3.12 in $GPUHOST_WHEELS (set NQPROF_WHEELHOUSE)" >&2
  exit 2
fi
mkdir -p "$M/toolkits" "$M/wheels"

# The wheels every toolkit's folder shares: for CPython 3.12 on x86-64 Linux, binary only.
PY312=(--only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none
       --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_27_x86_64
       --platform manylinux_2_28_x86_64 --platform linux_x86_64)
echo "--- wheels for Python 3.12 into $M/wheels"
rm -rf "$M/wheels.partial" && mkdir -p "$M/wheels.partial"
"$PY" -m pip download -q "${PY312[@]}" --find-links "$GPUHOST_WHEELS" -d "$M/wheels.partial" \
  tox "setuptools>=64" pycuda nvtx dask distributed 2>&1 | grep -v '^WARNING: Location' || true
# What the GPU host has (its Python's site-packages, seen by the tox environments): left out.
for name in numpy pandas matplotlib pillow fonttools contourpy kiwisolver pytest pytest_benchmark \
            hypothesis python_dateutil pytz tzdata pyparsing cycler; do
  rm -f "$M/wheels.partial/${name}"-[0-9]*.whl
done
ls "$M"/wheels.partial/tox-*.whl "$M"/wheels.partial/pycuda-*.whl "$M"/wheels.partial/setuptools-*.whl >/dev/null
rm -rf "$M/wheels" && mv "$M/wheels.partial" "$M/wheels"

mib() { du -sbL "$1" | awk '{printf "%.1f", $1 / 1048576}'; }
over=0
for v in "$@"; do
  v=${v#cuda}
  archive="$M/toolkits/cuda$v.tar.xz"
  if [ ! -s "$archive" ]; then
    echo "--- CUDA $v: packing the toolkit into $archive"
    PYTHONPATH=src "$PY" -m nqprof.cuda.wheel_toolkit pack "cuda$v" "$archive" 2>&1 | grep -v -E '^\+ |^WARNING: Location'
  fi
  carry="$M/carry-cuda$v"
  rm -rf "$carry" && mkdir -p "$carry"
  cp -l "$archive" "$carry/toolkit.tar.xz" 2>/dev/null || cp "$archive" "$carry/toolkit.tar.xz"
  cp -rl "$M/wheels" "$carry/wheels" 2>/dev/null || cp -r "$M/wheels" "$carry/wheels"
  echo "$v" > "$carry/TOOLKIT"
  size=$(mib "$carry")
  echo "CUDA $v: $carry $size MiB (toolkit $(mib "$carry/toolkit.tar.xz") MiB, wheels $(mib "$carry/wheels") MiB)"
  if awk -v s="$size" -v b="$BUDGET_MIB" 'BEGIN { exit !(s > b) }'; then
    echo "  over the budget of $BUDGET_MIB MiB" >&2
    over=1
  fi
done

echo "--- NVBench: $M/carry-nvbench"
rm -rf "$M/carry-nvbench" && mkdir -p "$M/carry-nvbench/wheels"
"$PY" -m pip download -q --no-deps "${PY312[@]}" -d "$M/carry-nvbench/wheels" "cuda-bench==0.3.0" 2>&1 \
  | grep -v '^WARNING: Location' || true
cp "$GPUHOST_WHEELS"/*.whl "$M/carry-nvbench/wheels/"
echo "NVBench: $M/carry-nvbench $(mib "$M/carry-nvbench") MiB"
echo "repository (tracked files): $(git ls-files -z | xargs -0 du -cb | tail -1 | awk '{printf "%.1f", $1 / 1048576}') MiB"
exit $over
