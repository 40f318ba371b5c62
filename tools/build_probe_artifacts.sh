#!/usr/bin/env bash
# Build the small artifacts tools/toolkit_probe.py loads on a GPU host, with two toolkits:
# the one the GPU host has (the control) and a newer 13.x one made of NVIDIA's PyPI wheels.
# The GPU host needs no compiler for them: only what a newer toolkit's *output* asks of the
# driver is tested.
#
#   tools/build_probe_artifacts.sh [OUTDIR]        # default .gpuhost/probe
#
# Environment:
#   NQPROF_PROBE_OLD     the control toolkit root        (default /usr/local/cuda-13.0)
#   NQPROF_PROBE_NEW     the newer toolkit root; made from wheels if it has no bin/nvcc
#                        (default /tmp/nqprof-probe-cuda13.5)
#   NQPROF_PROBE_NEW_RELEASE  the release of the wheels to install (default cuda13.5)
#   NQPROF_PROBE_VENV    the virtual environment the wheels go into (default /tmp/nqprof-probe-venv)
#   NQPROF_PROBE_ARCH    the target (default sm_90: H100/H200)
#
# Per toolkit release R (e.g. 13.0), OUTDIR gets:
#   plain.R.cubin          a one-line kernel, SASS only (what nqprof's plain builds are)
#   plain.R.ptx            the same kernel as PTX (the driver must JIT-compile it)
#   cdp.R.rdc.ptx          a parent kernel launching a child, relocatable PTX (what PyCUDA's
#                          DynamicSourceModule hands the driver's linker, with cudadevrt.R.a)
#   cdp.R.rdc.cubin        the same as relocatable SASS (driver-linked without any PTX)
#   cdp.R.linked.cubin     the same fully linked here by R's nvlink with R's libcudadevrt.a
#   feinbube.R.cubin       nqprof's kernels/feinbube.cu (NQ_N=12, NQ_BLOCK=64)
#   cudadevrt.R.a          R's libcudadevrt.a
# and toolkits.txt (release, nvcc version line, root) and src/ (the probe sources).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.gpuhost/probe}
old=${NQPROF_PROBE_OLD:-/usr/local/cuda-13.0}
new=${NQPROF_PROBE_NEW:-/tmp/nqprof-probe-cuda13.5}
new_release=${NQPROF_PROBE_NEW_RELEASE:-cuda13.5}
venv=${NQPROF_PROBE_VENV:-/tmp/nqprof-probe-venv}
arch=${NQPROF_PROBE_ARCH:-sm_90}
opts=(-lineinfo -std=c++17)  # nqprof's COMMON_OPTIONS

if [ ! -x "$new/bin/nvcc" ]; then
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  PYTHONPATH=src "$venv/bin/python" -m nqprof.cuda.wheel_toolkit install "$new_release" "$new"
  [ -x "$new/bin/nvcc" ] || { echo "no toolkit at $new (see the line above)" >&2; exit 1; }
fi

rm -rf "$out"
mkdir -p "$out/src"
cat >"$out/src/plain.cu" <<'EOF'
// out[i] = v + i for the 32 threads of one block.
extern "C" __global__ void probe_plain(int *out, int v) { out[threadIdx.x] = v + (int)threadIdx.x; }
EOF
cat >"$out/src/cdp.cu" <<'EOF'
// A parent launching a child from the device: the child writes out[i] = 2 v + i for 32
// threads; the parent records the launch's error code in out[32] (0: cudaSuccess).
extern "C" __global__ void probe_child(int *out, int v) { out[threadIdx.x] = 2 * v + (int)threadIdx.x; }

extern "C" __global__ void probe_parent(int *out, int v) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        probe_child<<<1, 32>>>(out, v);
        out[32] = (int)cudaGetLastError();
    }
}
EOF

: >"$out/toolkits.txt"
for root in "$old" "$new"; do
  nvcc=$root/bin/nvcc
  line=$("$nvcc" --version | grep -m1 'release')
  r=$(sed -E 's/.*release ([0-9]+\.[0-9]+).*/\1/' <<<"$line")
  lib=$(dirname "$(find -L "$root/lib64" "$root/lib" "$root"/targets/*/lib -maxdepth 1 -name libcudadevrt.a 2>/dev/null | head -1)")
  echo "$r  $line  $root" >>"$out/toolkits.txt"
  echo "CUDA $r: $root (libcudadevrt.a in $lib)"
  "$nvcc" "${opts[@]}" -arch="$arch" -cubin -o "$out/plain.$r.cubin" "$out/src/plain.cu"
  "$nvcc" "${opts[@]}" -arch="$arch" -ptx -o "$out/plain.$r.ptx" "$out/src/plain.cu"
  "$nvcc" "${opts[@]}" -arch="$arch" -rdc=true -ptx -o "$out/cdp.$r.rdc.ptx" "$out/src/cdp.cu"
  "$nvcc" "${opts[@]}" -arch="$arch" -rdc=true -cubin -o "$out/cdp.$r.rdc.cubin" "$out/src/cdp.cu"
  "$root/bin/nvlink" -arch="$arch" "$out/cdp.$r.rdc.cubin" -L"$lib" -lcudadevrt -o "$out/cdp.$r.linked.cubin"
  "$nvcc" "${opts[@]}" -DNQ_BLOCK=64 -DNQ_N=12 -Ikernels -arch="$arch" -cubin -o "$out/feinbube.$r.cubin" kernels/feinbube.cu
  cp -L "$lib/libcudadevrt.a" "$out/cudadevrt.$r.a"
done
echo "PTX versions:" $(grep -H -m1 '^\.version' "$out"/*.ptx | sed "s|$out/||")
ls -l "$out" | tail -n +2
du -sh "$out"
