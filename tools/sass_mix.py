"""Per-step instruction mix of the constellation kernel: SASS opcode counts of a build with
NQ_UNROLL=2 minus those of NQ_UNROLL=1 (one more copy of the step), for each variant.

    python3 tools/sass_mix.py [--span A,B] [DEFINES ...]    (each NAME=VALUE,...; none: the
                                                            default build)

--span 1,4: (unroll 4 - unroll 1) / 3 instead, the mean of three more copies (a step whose
code the compiler lays out differently in the first copy, or merges across copies, reads
more truly so). The row ALU sums the opcodes issued to the integer ALU pipe (LOP3, SHF,
ISETP, SEL, IADD3, PRMT, LEA, PLOP3; FLO and POPC are counted apart).

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


ALU = ("LOP3", "SHF", "ISETP", "SEL", "IADD3", "PRMT", "LEA", "PLOP3")


def main(argv: list[str]) -> int:
    from nqprof.cuda.toolkit import find_toolkit

    nvcc = find_toolkit().nvcc
    lo, hi = 1, 2
    if argv[:1] == ["--span"]:
        lo, hi = (int(x) for x in argv[1].split(","))
        argv = argv[2:]
    variants = argv or [""]
    cols = {}
    for v in variants:
        defines = [d for d in v.split(",") if d]
        one, two = opcodes(defines, lo, nvcc), opcodes(defines, hi, nvcc)
        cols[v or "default"] = {op: (two[op] - one[op]) / (hi - lo) for op in set(one) | set(two)}
    ops = sorted(
        {op for c in cols.values() for op in c},
        key=lambda o: -max(c.get(o, 0) for c in cols.values()),
    )

    def row(name: str, values) -> str:
        return f"{name:8s} " + " ".join(f"{x:22g}" if x == int(x) else f"{x:22.2f}" for x in values)

    print(f"{'op':8s} " + " ".join(f"{v[-22:]:>22s}" for v in cols))
    for op in ops:
        if any(c.get(op, 0) for c in cols.values()):
            print(row(op, [c.get(op, 0) for c in cols.values()]))
    print(row("total", [sum(c.values()) for c in cols.values()]))
    print(row("ALU", [sum(c.get(op, 0) for op in ALU) for c in cols.values()]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
