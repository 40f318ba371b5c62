#!/usr/bin/env bash
# Set nqprof up on a GPU host that has a driver, a CUDA toolkit and Python with numpy,
# pytest and pytest-benchmark but no package index, then run a command with it.
#
#   tools/gpuhost.sh COMMAND...        e.g. tools/gpuhost.sh nqprof solve 18 --strategy feinbube
#
# Reads wheels (pycuda, nvtx and their dependencies) from $NQPROF_WHEELHOUSE
# (default .gpuhost/wheelhouse) and, if present, the libdw/libelf debs that Nsight
# Systems' importer needs (and a Valgrind deb) from $NQPROF_DEBS (default .gpuhost/deb). Installs into
# $NQPROF_SITE (default /tmp/nqprof-site), which goes first on PYTHONPATH and PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
wheelhouse=${NQPROF_WHEELHOUSE:-.gpuhost/wheelhouse}
debs=${NQPROF_DEBS:-.gpuhost/deb}
site=${NQPROF_SITE:-/tmp/nqprof-site}

# Reinstall whenever the sources differ from what is installed (a host may stay up between runs).
# Only the sources count: the build leaves egg-info and caches in the tree.
stamp=$(find src kernels setup.py pyproject.toml -type f \( -name '*.py' -o -name '*.c' -o -name '*.cu' -o -name '*.cuh' \
  -o -name '*.toml' \) -not -path '*/__pycache__/*' | sort | xargs cat | md5sum | cut -d' ' -f1)
if [ "$(cat "$site/.nqprof-stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$site"
  # One pip call: a second --target install into the same folder skips existing bin/.
  python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --target "$site" \
    "$wheelhouse"/*.whl . 2>&1 | tail -3
  # Byte-compiled once, as a plain pip install does (--no-compile above keeps the install
  # quick; a host with PYTHONDONTWRITEBYTECODE would otherwise compile every import of every run).
  python3 -m compileall -q -j 0 "$site" >/dev/null 2>&1 || true
  echo "$stamp" > "$site/.nqprof-stamp"
fi
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$site/bin:$PATH"
export PYTHONUNBUFFERED=1

if [ -d "$debs" ] && [ ! -d /tmp/nqprof-dw ]; then
  mkdir -p /tmp/nqprof-dw
  for f in "$debs"/*.deb; do dpkg -x "$f" /tmp/nqprof-dw; done
fi
if [ -d /tmp/nqprof-dw ]; then
  export LD_LIBRARY_PATH="/tmp/nqprof-dw/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
# A Valgrind deb among them (for --nq-cpu-metric=instructions): unpacked, it runs from there.
if [ -x /tmp/nqprof-dw/usr/bin/valgrind ] && ! command -v valgrind >/dev/null; then
  export PATH="$PATH:/tmp/nqprof-dw/usr/bin" VALGRIND_LIB=/tmp/nqprof-dw/usr/libexec/valgrind
fi
exec "$@"
