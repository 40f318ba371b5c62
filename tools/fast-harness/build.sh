#!/bin/bash
# Standalone build of the fast kernels with a timing harness (no Python, no PyCUDA):
#   tools/fast-harness/build.sh && tools/fast-harness/fast_b128 -k tight_u4 -n 19 -d 7 -r 3
# Prints one RESULT line: count verified against the known count, CUDA-event times of each
# round (after -w warm-up rounds) and their median. The _nodes build also counts queens placed.
set -e
here="$(cd "$(dirname "$0")" && pwd)"; k="$here/../../kernels"
gcc -O2 -std=c11 -c "$k/cpu/d4.c" -o "$here/d4.o"
nvcc -O3 -arch=sm_90 -std=c++17 -lineinfo -I"$k" -DNQ_BLOCK=128 -o "$here/fast_b128" "$here/harness.cu" "$here/d4.o"
nvcc -O3 -arch=sm_90 -std=c++17 -lineinfo -I"$k" -DNQ_BLOCK=128 -DNQ_COUNT_NODES=1 -o "$here/fast_b128_nodes" "$here/harness.cu" "$here/d4.o"
