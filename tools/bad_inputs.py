"""Run nqprof on a list of bad inputs, one per line of the table it writes: the command, its
exit code and the first line it printed (stderr, else stdout). A check that every bad input
ends in one line and exit code 2 (or a documented other code), never a traceback.

    python tools/bad_inputs.py [-o .bad-inputs.md]

Needs no GPU. Files it needs (binary, empty, truncated, foreign) are made in a temporary
folder; nothing is written in the working tree but the table.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cases(tmp: Path) -> list[tuple[str, list[str], dict[str, str]]]:
    """(what is bad, argv after `nqprof`, extra environment)."""
    t = str(tmp)
    (tmp / "binary.json").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe" * 20)
    (tmp / "empty.json").write_bytes(b"")
    (tmp / "truncated.json").write_text('{"kind": "launch", "points": [{"count": 32')
    (tmp / "foreign.json").write_text('{"name": "not nqprof", "rows": 3}')
    (tmp / "list.json").write_text("[1, 2, 3]")
    (tmp / "ck-neg.json").write_text('{"format": "nqprof-cluster-checkpoint", "version": 1, "n": 12, "strategy": '
                                     '"serial", "params": {}, "depth": 4, "tasks": -1, "plan": "x", "done": {}}')
    (tmp / "ck-index.json").write_text('{"format": "nqprof-cluster-checkpoint", "version": 1, "n": 12, "strategy": '
                                       '"serial", "params": {}, "depth": 4, "tasks": 4, "plan": "x", '
                                       '"done": {"4": {"count": 1}}}')
    (tmp / "trace.sqlite").write_bytes(b"not a database at all" * 10)
    (tmp / "twin.sqlite").write_bytes(b"SQLite format 3\x00")
    (tmp / "twin.json").write_text("keep me")
    (tmp / "adir").mkdir(exist_ok=True)
    (tmp / "matrix").mkdir(exist_ok=True)
    (tmp / "matrix" / "resources-bad.json").write_bytes(b"\xff\x00garbage")
    e: dict[str, str] = {}
    return [
        # top level
        ("no command", [], e),
        ("unknown command", ["frobnicate"], e),
        ("NQPROF_TIMEOUT not a number, --help", ["--help"], {"NQPROF_TIMEOUT": "abc"}),
        ("NQPROF_TIMEOUT not a number, strategies", ["strategies"], {"NQPROF_TIMEOUT": "abc"}),
        # solve
        ("N not a number", ["solve", "twelve"], e),
        ("N zero", ["solve", "0"], e),
        ("N negative", ["solve", "--", "-3"], e),
        ("N too large", ["solve", "28"], e),
        ("N float", ["solve", "12.5"], e),
        ("unknown strategy", ["solve", "12", "-s", "nope"], e),
        ("unknown option", ["solve", "12", "--bogus"], e),
        ("param without =", ["solve", "12", "-p", "depth"], e),
        ("param given twice", ["solve", "12", "-s", "multicore", "-p", "depth=2", "-p", "depth=3"], e),
        ("param of another strategy", ["solve", "12", "-s", "serial", "-p", "multicore.depth=2"], e),
        ("param value list in solve", ["solve", "12", "-s", "multicore", "-p", "depth=2,3"], e),
        ("unknown param", ["solve", "12", "-s", "multicore", "-p", "bogus=1"], e),
        ("param out of range", ["solve", "12", "-s", "feinbube", "-p", "block=2000"], e),
        ("rounds zero", ["solve", "12", "--rounds", "0"], e),
        ("rounds text", ["solve", "12", "--rounds", "many"], e),
        ("warmup negative", ["solve", "12", "--warmup", "-1"], e),
        ("timeout zero", ["solve", "12", "--timeout", "0"], e),
        ("timeout nan", ["solve", "12", "--timeout", "nan"], e),
        ("output in /proc", ["solve", "8", "-o", "/proc/x.json"], e),
        ("output wrong suffix", ["solve", "8", "-o", f"{t}/x.txt"], e),
        ("output is a folder", ["solve", "8", "-o", f"{t}/adir"], e),
        ("GPU strategy without a GPU", ["solve", "12", "-s", "feinbube"], e),
        ("strategy below its smallest N", ["solve", "1", "-s", "dp2"], e),
        # cluster
        ("cluster address without port", ["solve", "8", "--cluster", "tcp://host"], e),
        ("cluster address garbage", ["solve", "8", "--cluster", "foo"], e),
        ("cluster address port out of range", ["solve", "8", "--cluster", "host:99999"], e),
        ("cluster address unknown protocol", ["solve", "8", "--cluster", "http://h:1"], e),
        ("cluster workers zero", ["solve", "8", "--cluster", "local", "--workers", "0"], e),
        ("cluster tasks zero", ["solve", "8", "--cluster", "local", "--tasks", "0"], e),
        ("cluster retries negative", ["solve", "8", "--cluster", "local", "--retries", "-1"], e),
        ("cluster checkpoint folder missing", ["solve", "12", "-s", "serial", "--cluster", "local", "--checkpoint",
                                               "/nonexistent/dir/ck.json"], e),
        ("checkpoint binary", ["solve", "8", "--cluster", "local", "--workers", "1", "-q", "--checkpoint",
                               f"{t}/binary.json"], e),
        ("checkpoint negative task count", ["solve", "12", "--cluster", "local", "--workers", "1", "-q",
                                            "--checkpoint", f"{t}/ck-neg.json"], e),
        ("checkpoint index = task count", ["solve", "12", "--cluster", "local", "--workers", "1", "-q",
                                           "--checkpoint", f"{t}/ck-index.json"], e),
        ("cluster option without --cluster", ["solve", "8", "--tasks", "4"], e),
        ("cluster with rounds", ["solve", "8", "--cluster", "local", "--rounds", "3"], e),
        ("cluster split depth too deep", ["solve", "27", "--cluster", "local", "--split-depth", "12"], e),
        # sweep
        ("sweep output in /proc", ["sweep", "-s", "serial", "--n", "8", "-o", "/proc/x.json"], e),
        ("sweep output folder missing", ["sweep", "-s", "serial", "--n", "8", "-o", "/nonexistent/x.json"], e),
        ("sweep N list empty item", ["sweep", "-s", "serial", "--n", "8,,9"], e),
        ("sweep N range reversed", ["sweep", "-s", "serial", "--n", "12:8"], e),
        ("sweep N range garbage", ["sweep", "-s", "serial", "--n", "8:x"], e),
        ("sweep unknown strategy", ["sweep", "-s", "serial,nope", "--n", "8"], e),
        ("sweep axis of unknown strategy", ["sweep", "--n", "8", "-p", "nope.depth=2"], e),
        ("sweep axis key nobody has", ["sweep", "-s", "serial", "--n", "8", "-p", "depth=2"], e),
        ("sweep axis given twice", ["sweep", "-s", "multicore", "--n", "8", "-p", "multicore.depth=2",
                                    "-p", "multicore.depth=3"], e),
        ("sweep axis empty value", ["sweep", "-s", "multicore", "--n", "8", "-p", "multicore.depth=2,"], e),
        ("sweep rounds zero", ["sweep", "-s", "serial", "--n", "8", "--rounds", "0"], e),
        ("sweep GPU strategy without GPU (skipped rows, exit 0)", ["sweep", "-s", "feinbube", "--n", "8", "-q"], e),
        # plan
        ("plan of a non-CDP strategy", ["plan", "12", "-s", "serial"], e),
        ("plan free-gib zero", ["plan", "12", "-s", "dp2", "--free-gib", "0"], e),
        ("plan free-gib text", ["plan", "12", "-s", "dp2", "--free-gib", "lots"], e),
        ("plan depth too large for memory", ["plan", "27", "-s", "dp2", "-p", "depth=12"], e),
        ("plan cannot fit one board", ["plan", "16", "-s", "dp1", "-p", "z=1", "-p", "depth=1"], e),
        ("plan N too large", ["plan", "30", "-s", "dp2"], e),
        ("plan unknown option", ["plan", "12", "-s", "dp2", "--bogus"], e),
        # build, matrix
        ("build output wrong suffix", ["build", "-o", f"{t}/r.txt"], e),
        ("build unknown arch", ["build", "--arch", "sm_1"], e),
        ("build toolkit folder missing", ["build", "--cuda-home", "/nonexistent"], e),
        ("matrix folder missing", ["matrix", "/nonexistent"], e),
        ("matrix binary table", ["matrix", f"{t}/matrix"], e),
        ("matrix output in /proc", ["matrix", f"{t}/matrix", "-o", "/proc/m.txt"], e),
        # history, compare, plot
        ("history folder missing", ["history", "/nonexistent"], e),
        ("history binary file", ["history", f"{t}/binary.json"], e),
        ("compare one run", ["compare", "--storage", "tests/data/benchmarks", "0001"], e),
        ("compare unknown metric", ["compare", "--storage", "tests/data/benchmarks", "--metric", "bogus"], e),
        ("plot output in /proc", ["plot", "--storage", "tests/data/benchmarks", "-o", "/proc/figs"], e),
        # trace, profile
        ("trace missing file", ["trace", "load", f"{t}/missing.sqlite"], e),
        ("trace not a database", ["trace", "breakdown", f"{t}/trace.sqlite"], e),
        ("trace binary .json input", ["trace", "load", f"{t}/binary.json"], e),
        ("trace chrome would overwrite an unnamed file", ["trace", "chrome", f"{t}/twin.sqlite"], e),
        ("trace chrome output in /proc", ["trace", "chrome", f"{t}/trace.sqlite", "-o", "/proc/t.json"], e),
        ("trace load csv folder missing", ["trace", "load", f"{t}/trace.sqlite", "--csv", "/nonexistent/a/b"], e),
        ("profile without command", ["profile"], e),
        ("profile nsys missing", ["profile", "--nsys", "/nonexistent/nsys", "--", "solve", "8"], e),
        # report
        ("report unknown paper", ["report", "nopaper"], e),
        ("report unknown artefact", ["report", "plauth", "nothing"], e),
        ("report output wrong suffix", ["report", "table3", "--model-only", "-o", f"{t}/t.png"], e),
        ("report figure output .md", ["report", "figure", "-o", f"{t}/t.md"], e),
        ("report GPU artefact without GPU", ["report", "table2"], e),
        ("report carneiro history binary", ["report", "carneiro", "table2", "--history", f"{t}/binary.json"], e),
        ("report kerbl from empty", ["report", "kerbl", "fig1", "--from", f"{t}/empty.json"], e),
        # characterize
        ("characterize from missing", ["characterize", "launch", "--from", f"{t}/missing.json"], e),
        ("characterize from binary", ["characterize", "launch", "--from", f"{t}/binary.json"], e),
        ("characterize from empty", ["characterize", "reserve", "--from", f"{t}/empty.json"], e),
        ("characterize from truncated", ["characterize", "launch", "--from", f"{t}/truncated.json"], e),
        ("characterize from foreign", ["characterize", "ideal", "--from", f"{t}/foreign.json"], e),
        ("characterize from a list", ["characterize", "efficiency", "--from", f"{t}/list.json"], e),
        ("characterize timeline from foreign", ["characterize", "timeline", "--from", f"{t}/foreign.json"], e),
        ("characterize output wrong suffix", ["characterize", "launch", "--from",
                                              "tests/data/characterize/synthetic-launch.json", "-o", f"{t}/x.txt"], e),
        ("characterize figure folder missing", ["characterize", "launch", "--from",
                                                "tests/data/characterize/synthetic-launch.json", "--figure",
                                                "/nonexistent/f.png"], e),
        ("characterize counts garbage", ["characterize", "launch", "--counts", "12,abc"], e),
        ("characterize without GPU", ["characterize", "launch"], e),
        # queue-bench
        ("queue-bench from binary", ["queue-bench", "--from", f"{t}/binary.json"], e),
        ("queue-bench from foreign", ["queue-bench", "--from", f"{t}/foreign.json"], e),
        ("queue-bench fill zero", ["queue-bench", "--fill", "0"], e),
        ("queue-bench output folder missing", ["queue-bench", "--from", "tests/data/queue-bench-h200.json", "-o",
                                               "/nonexistent/q.json"], e),
        ("queue-bench without GPU", ["queue-bench"], e),
        # env
        ("env unknown option", ["env", "--bogus"], e),
    ]


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default=str(ROOT / ".bad-inputs.md"))
    args = ap.parse_args(argv)
    rows, bad = [], 0
    with tempfile.TemporaryDirectory(prefix="nqprof-bad-") as tmp:
        for what, nq, env in cases(Path(tmp)):
            t0 = time.perf_counter()
            try:
                out = subprocess.run([sys.executable, "-m", "nqprof.cli", *nq], cwd=ROOT, capture_output=True,
                                     text=True, timeout=120, env={**os.environ, **env})
                code, stderr, stdout = out.returncode, out.stderr, out.stdout
            except subprocess.TimeoutExpired:
                code, stderr, stdout = "timeout", "", ""
            shown = first_line(stderr) or first_line(stdout)
            traceback = "Traceback" in stderr
            bad += traceback or code == "timeout"
            command = " ".join(f"{k}={v}" for k, v in env.items()) + (" " if env else "") + "nqprof " + \
                " ".join(shlex.quote(a.replace(tmp, "$TMP")) for a in nq)
            rows.append((what, command, code, shown.replace(tmp, "$TMP"), traceback, time.perf_counter() - t0))
            print(f"{code!s:>7}  {command}\n         {rows[-1][3][:160]}", flush=True)
    lines = [f"# Bad inputs ({len(rows)}), run with `python tools/bad_inputs.py`", "",
             "| # | bad input | command | exit | first line printed |", "|---|---|---|---|---|"]
    for i, (what, command, code, shown, traceback, _) in enumerate(rows, 1):
        cell = shown.replace("|", "\\|")
        lines.append(f"| {i} | {what} | `{command}` | {code}{' TRACEBACK' if traceback else ''} | {cell} |")
    Path(args.output).write_text("\n".join(lines) + "\n")
    print(f"{len(rows)} bad inputs, {bad} with a traceback or a timeout; table in {args.output}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
