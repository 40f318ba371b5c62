#!/usr/bin/env bash
# The trees the before/after stages of tools/gpu_check.sh compare against (suite-seq, solve20:
# OLD_TREE), staged under .stage/ (carried to the GPU host, not tracked):
#
#   .stage/main38     the tree of 38dd55d, before issue 45's measurement core
#   .stage/main38cst  the same with cdp-cst's counting kernels (cc_count, cc_count0) built
#                     without launch bounds, as b1f2d54 builds them since: a comparison with
#                     it leaves that kernel change out and shows the core's alone
#   .stage/main38same main38cst with devgraph's graph drivers timed as 7bd60f4 times them since
#                     (held and timed on the graph's own stream, without the host's cuGraphLaunch
#                     call: tools/baseline38-devgraph.patch) and every GPU session's layout pad
#                     drawn as 9a67db0 draws it (tools/baseline38-pad.patch: without it every
#                     process of the old tree lands its buffers where the one before did, so all
#                     its runs sit at one level: docs/results/core-h200/same-baseline); the tree
#                     before the core with the deliberate changes of what is measured, so before
#                     against after shows the core alone
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
rm -rf .stage/main38same && cp -r .stage/main38cst .stage/main38same
patch -s -p1 -d .stage/main38same < tools/baseline38-devgraph.patch
patch -s -p1 -d .stage/main38same < tools/baseline38-pad.patch
echo "staged .stage/main38, .stage/main38cst and .stage/main38same"
