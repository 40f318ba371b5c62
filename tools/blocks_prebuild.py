"""Build, in parallel, the kernels the blocks-bounds stage of tools/gpu_check.sh asks for:
cdp-cst's module with each NQ_MIN_BLOCKS given (with and without the block records), and the
block=768 builds of fast and cdp-cst.

    python3 tools/blocks_prebuild.py 0 2 4 6 8
"""

import sys

from nqprof.cuda.build import prebuild
from nqprof.cuda.device import driver
from nqprof.strategies import get


def main(bounds: list[int]) -> int:
    cdp, fast = get("cdp-cst").sources[0], get("fast").sources[0]
    builds = []
    for records in ({}, {"NQ_BLOCK_RECORDS": 1}):
        builds += [
            (cdp, {"NQ_BLOCK": 128, "NQ_MIN_BLOCKS": k, **records}) for k in bounds if k != 1
        ]
        builds += [(src, {"NQ_BLOCK": 768, **records}) for src in (cdp, fast)]
    major, minor = driver().Device(0).compute_capability()
    prebuild(builds, f"sm_{major}{minor}")
    print(f"{len(builds)} builds ready")
    return 0


if __name__ == "__main__":
    sys.exit(main([int(a) for a in sys.argv[1:]]))
