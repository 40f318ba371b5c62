"""Per-step instruction mix of the constellation kernel: SASS opcode counts of a build with
NQ_UNROLL=2 minus those of NQ_UNROLL=1 (one more copy of the step), for each variant.

    python3 tools/sass_mix.py [DEFINES ...]    (each NAME=VALUE,...; none: the default build)

Needs nvcc and cuobjdump (the CUDA toolkit's, or $CUOBJDUMP). Prints one column per build: how many
instructions of each opcode one step adds (ALU-pipe opcodes, LOP3, ISETP, SHF, SEL, ..., are
what the kernel is bound by on an H200).
"""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
import tempfile


def opcodes(defines: list[str], unroll: int, nvcc: str) -> collections.Counter:
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "k.cubin")
        subprocess.run(
            [
                nvcc,
                "-arch=sm_90",
                "-cubin",
                "-DNQ_BLOCK=128",
                f"-DNQ_UNROLL={unroll}",
                "-Ikernels",
                *(f"-D{d}" for d in defines),
                "-o",
                cubin,
                "kernels/constellation.cu",
            ],
            check=True,
        )
        cuobjdump = os.environ.get("CUOBJDUMP") or os.path.join(os.path.dirname(nvcc), "cuobjdump")
        sass = subprocess.run(
            [cuobjdump, "-sass", cubin],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    mix = collections.Counter()
    for line in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9]*)", line)
        if m:
            mix[m.group(1)] += 1
    return mix


def main(argv: list[str]) -> int:
    from nqprof.cuda.toolkit import find_toolkit

    nvcc = find_toolkit().nvcc
    variants = argv or [""]
    cols = {}
    for v in variants:
        defines = [d for d in v.split(",") if d]
        one, two = opcodes(defines, 1, nvcc), opcodes(defines, 2, nvcc)
        cols[v or "default"] = {op: two[op] - one[op] for op in set(one) | set(two)}
    ops = sorted(
        {op for c in cols.values() for op in c},
        key=lambda o: -max(c.get(o, 0) for c in cols.values()),
    )
    print(f"{'op':8s} " + " ".join(f"{v[:22]:>22s}" for v in cols))
    for op in ops:
        if any(c.get(op, 0) for c in cols.values()):
            print(f"{op:8s} " + " ".join(f"{c.get(op, 0):22d}" for c in cols.values()))
    print(f"{'total':8s} " + " ".join(f"{sum(c.values()):22d}" for c in cols.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
