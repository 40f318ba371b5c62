#!/usr/bin/env bash
# The trees the before/after stages of tools/gpu_check.sh compare against (suite-seq, solve20:
# OLD_TREE), staged under .stage/ (carried to the GPU host, not tracked):
#
#   .stage/main38     the tree of 38dd55d, before issue 45's measurement core
#   .stage/main38cst  the same with cdp-cst's counting kernels (cc_count, cc_count0) built
#                     without launch bounds, as b1f2d54 builds them since: a comparison with
#                     it leaves that kernel change out and shows the core's alone
set -euo pipefail
cd "$(dirname "$0")/.."
for tree in main38 main38cst; do
  rm -rf ".stage/$tree" && mkdir -p ".stage/$tree"
  git archive 38dd55d | tar -x -C ".stage/$tree"
done
cu=.stage/main38cst/kernels/cdp_cst.cu
sed -i 's/^extern "C" __global__ void __launch_bounds__(NQ_BLOCK, NQ_MIN_BLOCKS) cc_count(/extern "C" __global__ void cc_count(/;
        s/^extern "C" __global__ void __launch_bounds__(NQ_BLOCK, NQ_MIN_BLOCKS)$/extern "C" __global__ void/' "$cu"
if grep -n "__launch_bounds__(NQ_BLOCK" "$cu"; then
  echo "stage_baseline: cdp_cst.cu still has counting kernels with launch bounds" >&2
  exit 1
fi
echo "staged .stage/main38 and .stage/main38cst"
