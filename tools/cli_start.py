"""How long `nqprof --help` and `nqprof strategies` take to start, beside `python -c "import
numpy"` (the bar: at most 1.5 times numpy's import).

    python3 tools/cli_start.py [--repeats 20]

Each command runs as a whole process, the three interleaved round by round so that a busy
machine slows them alike; it prints the median of each and its ratio to numpy's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

BAR = 1.5


def nqprof_command() -> list[str]:
    """The installed `nqprof` script beside this interpreter, else ``python -m nqprof``."""
    script = shutil.which("nqprof", path=os.path.dirname(sys.executable))
    return [script] if script else [sys.executable, "-m", "nqprof"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--repeats", type=int, default=20, help="runs of each command (default: 20)"
    )
    args = parser.parse_args()
    if args.repeats < 1:
        print(
            f"cli_start.py: error: --repeats must be at least 1, got {args.repeats}",
            file=sys.stderr,
        )
        return 2
    nqprof = nqprof_command()
    commands = {
        'python -c "import numpy"': [sys.executable, "-c", "import numpy"],
        "nqprof --help": [*nqprof, "--help"],
        "nqprof strategies": [*nqprof, "strategies"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.repeats):
        for name, argv in commands.items():
            t0 = time.perf_counter()
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - t0)
    base = statistics.median(times['python -c "import numpy"'])
    for name, values in times.items():
        median = statistics.median(values)
        ratio = median / base
        verdict = (
            "" if name.startswith("python") else ("  ok" if ratio <= BAR else f"  over {BAR}x")
        )
        print(f"{name:28} {median * 1e3:7.1f} ms  {ratio:4.2f}x{verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
