"""Kept for the commands recorded in docs/results: `nqprof sweep` does this now.

    python tools/sweep.py feinbube --n 16:18 --param opt=local,rows-left --repeats 5 [--json FILE]

is `nqprof sweep --strategy feinbube --n 16:18 --param feinbube.opt=local,rows-left --rounds 5
[-o FILE]`.
"""

from __future__ import annotations

import sys

from nqprof.cli import main


def translate(argv: list[str]) -> list[str]:
    """The old argument form (strategy first, ``--param key=v1,v2``) in `nqprof sweep`'s."""
    strategy, rest = argv[0], argv[1:]
    out = ["sweep", "--strategy", strategy]
    it = iter(rest)
    for arg in it:
        if arg == "--param":
            out += ["--param", f"{strategy}.{next(it)}"]
        elif arg == "--json":  # a file then; sweep's --json prints, -o writes
            out += ["-o", next(it)]
        else:
            out.append(arg)
    return out


if __name__ == "__main__":
    sys.exit(main(translate(sys.argv[1:])))
