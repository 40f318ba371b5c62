"""Run nqprof on a list of bad inputs, one per line of the table it writes: the command, its
exit code and the first line it printed (stderr, else stdout). A check that every bad input
ends in one line and exit code 2 (or a documented other code), never a traceback.

    python tools/bad_inputs.py [-o .bad-inputs.md] [-k TEXT] [-j JOBS]

Three lists:

* the hand-written bad inputs of every command (:func:`cases`): files, paths, names, grammar;
* every number option of every command (:func:`number_cases`), found in the parsers
  (``nqprof.cli.build_parser``: the options registered with ``nqprof.numeric.add_number``
  and the shared numeric options of ``nqprof.options``), each given every one of
  :data:`BAD_NUMBERS`, and NQPROF_TIMEOUT and a strategy parameter the same; each must end
  in exit code 2 and a first line naming the option;
* every ``--nq-*`` option of the pytest plugin (:func:`plugin_cases`), in a pytest run of one
  nqprof benchmark: numbers as above, the other options' bad values; each must be a usage
  error (exit code 4) naming the option, never an INTERNALERROR.

An option that is neither a number option nor listed in :data:`TEXT_OPTIONS` (or
:data:`PLUGIN_TEXT_CASES`) stops the tool: a new option is classified, never forgotten
(tests/test_robust.py runs that check, and some number cases in-process).

Needs no GPU. Files it needs (binary, empty, truncated, foreign) are made in a temporary
folder; nothing is written in the working tree but the table.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: What every number is given: infinities, nan, negative, zero (left out where the option
#: takes it: ZERO_IS_VALID), huge, and malformed.
BAD_NUMBERS = (
    "inf",
    "-inf",
    "nan",
    "-1",
    "0",
    "1e10",
    "1e308",
    str(10**30),
    "1.5.2",
    "",
    " ",
    "0x10",
    "1_000",
)
#: Number options (without -- or --nq-) and parameters for which 0 is a value, not a bad one.
ZERO_IS_VALID = frozenset(
    {"warmup", "retries", "child-launches", "pending", "heap-mib", "multicore.depth", "shared"}
)
#: The options of the commands whose values are not numbers (their bad values are in
#: :func:`cases`); every other option must be a number option.
TEXT_OPTIONS = frozenset(
    {
        "--strategy",
        "--param",
        "--timer",
        "--instructions",
        "--quiet",
        "--json",
        "--output",
        "--cluster",
        "--checkpoint",
        "--arch",
        "--cuda-home",
        "--skip-missing",
        "dir",
        "storage",
        "--strict",
        "--csv",
        "runs",
        "run",
        "--storage",
        "--metric",
        "--rate",
        "--fail-on",
        "--traces",
        "--run",
        "file",
        "--table",
        "--force",
        "--nsys",
        "--trace",
        "profiled_command",
        "--model-only",
        "--beyond-limits",
        "--vs",
        "--vs-strategy",
        "--strategies",
        "--history",
        "--figure",
        "--baselines",
        "--modes",
        "--paths",
        "--n",
        "--from",
        "--out-dir",
        "--ncu",
        "--chrome",
        "--queues",
        "--variants",
        "--outdir",
        "--figure-variant",
        "-o",
    }
)
#: What a command needs around the option tried: (other arguments, its positional N if it
#: takes one). Other commands need nothing.
CONTEXT: dict[tuple[str, ...], tuple[list[str], str | None]] = {
    ("solve",): (["-s", "serial"], "8"),
    ("sweep",): (["-s", "serial", "--n", "8"], None),
    ("plan",): (["-s", "dp2"], "12"),
    ("ab",): (["-s", "serial", "--vs-strategy", "serial"], "8"),
    ("characterize", "timeline"): ([], "13"),
    ("report", "plauth", "figure"): (["-o", "{tmp}/f.png"], None),
    ("report", "figure"): (["-o", "{tmp}/f.png"], None),
}
#: Options that apply only beside another one.
NEEDS = {
    flag: ["--cluster=local"] for flag in ("--workers", "--tasks", "--split-depth", "--retries")
}
#: A strategy parameter given each bad number: (command line before it, the parameter).
PARAM_CASES = [
    (["solve", "8", "-s", "multicore"], "multicore.depth"),
    (["sweep", "-s", "multicore", "--n", "8"], "multicore.depth"),
    (["plan", "12", "-s", "dp2"], "dp2.depth"),
]
#: The plugin's options whose values are not numbers: (what is bad, arguments, environment).
PLUGIN_TEXT_CASES: dict[str, list[tuple[str, list[str], dict[str, str]]]] = {
    "--nq-vs": [
        ("key no selected strategy has", ["--nq-strategy=serial", "--nq-vs=depth=2"], {}),
        ("no value", ["--nq-strategy=multicore", "--nq-vs=depth"], {}),
        ("empty value", ["--nq-strategy=multicore", "--nq-vs=depth="], {}),
    ],
    "--nq-vs-fail": [
        ("without --nq-vs", ["--nq-vs-fail=slower"], {}),
        (
            "unknown verdict",
            ["--nq-strategy=multicore", "--nq-vs=depth=2", "--nq-vs-fail=worse"],
            {},
        ),
    ],
    "--nq-strategy": [
        ("unknown strategy", ["--nq-strategy=nope"], {}),
        ("empty strategy", ["--nq-strategy="], {}),
        ("empty item", ["--nq-strategy=serial,,multicore"], {}),
    ],
    "--nq-param": [
        ("axis of a strategy not selected", ["--nq-param=multicore.depth=1"], {}),
        ("key no selected strategy has", ["--nq-param=depth=1"], {}),
        ("unknown key", ["--nq-strategy=multicore", "--nq-param=multicore.bogus=1"], {}),
        ("unknown strategy", ["--nq-param=nope.depth=1"], {}),
        ("empty value", ["--nq-strategy=multicore", "--nq-param=multicore.depth="], {}),
        ("empty item", ["--nq-strategy=multicore", "--nq-param=multicore.depth=1,"], {}),
        (
            "given twice",
            [
                "--nq-strategy=multicore",
                "--nq-param=multicore.depth=1",
                "--nq-param=multicore.depth=2",
            ],
            {},
        ),
        ("no key", ["--nq-param==1"], {}),
    ],
    "--nq-timer": [
        ("unknown timer", ["--nq-timer=fast"], {}),
        ("empty timer", ["--nq-timer="], {}),
    ],
    "--nq-cluster": [
        ("address garbage", ["--nq-cluster=foo"], {}),
        ("empty address", ["--nq-cluster="], {}),
        ("port out of range", ["--nq-cluster=host:99999"], {}),
        ("unknown protocol", ["--nq-cluster=http://h:1"], {}),
    ],
    "--nq-cpu-metric": [
        ("unknown metric", ["--nq-cpu-metric=cycles"], {}),
        ("empty metric", ["--nq-cpu-metric="], {}),
        (
            "valgrind missing",
            ["--nq-cpu-metric=instructions"],
            {"NQPROF_VALGRIND": "/nonexistent/valgrind"},
        ),
    ],
    "--nq-trace": [("nsys missing", ["--nq-trace"], {"NQPROF_NSYS": "/nonexistent/nsys"})],
    "--nq-trace-dir": [
        ("empty folder", ["--nq-trace-dir="], {}),
        ("folder in /proc", ["--nq-trace-dir=/proc/x"], {}),
        ("a file", ["--nq-trace-dir={tmp}/binary.json"], {}),
    ],
    "--nq-compare-fail": [
        ("unknown verdict", ["--benchmark-compare", "--nq-compare-fail=worse"], {}),
        ("empty list", ["--benchmark-compare", "--nq-compare-fail="], {}),
        ("same is no failure", ["--benchmark-compare", "--nq-compare-fail=same"], {}),
        ("without --benchmark-compare", ["--nq-compare-fail=slower"], {}),
    ],
}
#: The one benchmark the plugin's cases run (if an option were accepted).
PLUGIN_TEST = "def test_nq(nqbench):\n    assert nqbench.run().verified\n"
PLUGIN_BASE = ["--nq-strategy=serial", "--nq-n=8"]


@dataclass
class Case:
    """One bad input: ``argv`` after ``nqprof`` (or, ``pytest``, after ``python -m pytest``)."""

    what: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    #: what the first line must name (None: any one line, no traceback)
    names: str | None = None
    pytest: bool = False
    #: the command and the option (or variable) it tries
    option: str = ""

    @property
    def code(self) -> int | None:
        """The exit code it must end in (None: any but a traceback)."""
        return None if self.names is None else 4 if self.pytest else 2


def cases(tmp: Path) -> list[tuple[str, list[str], dict[str, str]]]:
    """The hand-written ones: (what is bad, argv after `nqprof`, extra environment)."""
    t = str(tmp)
    (tmp / "binary.json").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe" * 20)
    (tmp / "empty.json").write_bytes(b"")
    (tmp / "truncated.json").write_text('{"kind": "launch", "points": [{"count": 32')
    (tmp / "foreign.json").write_text('{"name": "not nqprof", "rows": 3}')
    (tmp / "list.json").write_text("[1, 2, 3]")
    (tmp / "empty").mkdir(exist_ok=True)
    nobin = json.loads(Path("tests/data/nvbench/suite-1.json").read_text())  # samples elsewhere
    (tmp / "nvbench-nobin.json").write_text(json.dumps(nobin))
    (tmp / "ck-neg.json").write_text(
        '{"format": "nqprof-cluster-checkpoint", "version": 1, "n": 12, "strategy": '
        '"serial", "params": {}, "depth": 4, "tasks": -1, "plan": "x", "done": {}}'
    )
    (tmp / "ck-index.json").write_text(
        '{"format": "nqprof-cluster-checkpoint", "version": 1, "n": 12, "strategy": '
        '"serial", "params": {}, "depth": 4, "tasks": 4, "plan": "x", '
        '"done": {"4": {"count": 1}}}'
    )
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
        (
            "param given twice",
            ["solve", "12", "-s", "multicore", "-p", "depth=2", "-p", "depth=3"],
            e,
        ),
        (
            "param of another strategy",
            ["solve", "12", "-s", "serial", "-p", "multicore.depth=2"],
            e,
        ),
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
        ("instructions of a GPU strategy", ["solve", "8", "-s", "dp3", "--instructions"], e),
        (
            "instructions without valgrind",
            ["solve", "8", "--instructions"],
            {**e, "NQPROF_VALGRIND": "/nonexistent/valgrind"},
        ),
        ("instructions with a cluster", ["solve", "8", "--instructions", "--cluster", "local"], e),
        # cluster
        ("cluster address without port", ["solve", "8", "--cluster", "tcp://host"], e),
        ("cluster address garbage", ["solve", "8", "--cluster", "foo"], e),
        ("cluster address port out of range", ["solve", "8", "--cluster", "host:99999"], e),
        ("cluster address unknown protocol", ["solve", "8", "--cluster", "http://h:1"], e),
        ("cluster workers zero", ["solve", "8", "--cluster", "local", "--workers", "0"], e),
        ("cluster tasks zero", ["solve", "8", "--cluster", "local", "--tasks", "0"], e),
        ("cluster retries negative", ["solve", "8", "--cluster", "local", "--retries", "-1"], e),
        (
            "cluster checkpoint folder missing",
            [
                "solve",
                "12",
                "-s",
                "serial",
                "--cluster",
                "local",
                "--checkpoint",
                "/nonexistent/dir/ck.json",
            ],
            e,
        ),
        *(
            (
                what,
                [
                    "solve",
                    n,
                    "--cluster",
                    "local",
                    "--workers",
                    "1",
                    "-q",
                    "--checkpoint",
                    f"{t}/{file}",
                ],
                e,
            )
            for what, n, file in (
                ("checkpoint binary", "8", "binary.json"),
                ("checkpoint negative task count", "12", "ck-neg.json"),
                ("checkpoint index = task count", "12", "ck-index.json"),
            )
        ),
        ("cluster option without --cluster", ["solve", "8", "--tasks", "4"], e),
        ("cluster with rounds", ["solve", "8", "--cluster", "local", "--rounds", "3"], e),
        (
            "cluster split depth too deep",
            ["solve", "27", "--cluster", "local", "--split-depth", "12"],
            e,
        ),
        # sweep
        ("sweep output in /proc", ["sweep", "-s", "serial", "--n", "8", "-o", "/proc/x.json"], e),
        (
            "sweep output folder missing",
            ["sweep", "-s", "serial", "--n", "8", "-o", "/nonexistent/x.json"],
            e,
        ),
        ("sweep N list empty item", ["sweep", "-s", "serial", "--n", "8,,9"], e),
        ("sweep N range reversed", ["sweep", "-s", "serial", "--n", "12:8"], e),
        ("sweep N range garbage", ["sweep", "-s", "serial", "--n", "8:x"], e),
        ("sweep unknown strategy", ["sweep", "-s", "serial,nope", "--n", "8"], e),
        ("sweep axis of unknown strategy", ["sweep", "--n", "8", "-p", "nope.depth=2"], e),
        ("sweep axis key nobody has", ["sweep", "-s", "serial", "--n", "8", "-p", "depth=2"], e),
        (
            "sweep axis given twice",
            [
                "sweep",
                "-s",
                "multicore",
                "--n",
                "8",
                "-p",
                "multicore.depth=2",
                "-p",
                "multicore.depth=3",
            ],
            e,
        ),
        (
            "sweep axis empty value",
            ["sweep", "-s", "multicore", "--n", "8", "-p", "multicore.depth=2,"],
            e,
        ),
        ("sweep rounds zero", ["sweep", "-s", "serial", "--n", "8", "--rounds", "0"], e),
        (
            "sweep GPU strategy without GPU (skipped rows, exit 0)",
            ["sweep", "-s", "feinbube", "--n", "8", "-q"],
            e,
        ),
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
        (
            "compare unknown metric",
            ["compare", "--storage", "tests/data/benchmarks", "--metric", "bogus"],
            e,
        ),
        (
            "compare an NVBench file and a run",
            ["compare", "tests/data/nvbench/suite-1.json", "0001"],
            e,
        ),
        (
            "compare NVBench samples missing",
            ["compare", f"{t}/nvbench-nobin.json", "tests/data/nvbench/suite-2.json"],
            e,
        ),
        ("export no run", ["export", "--storage", f"{t}/empty", "-o", f"{t}/x.json"], e),
        (
            "export unknown run",
            ["export", "9999", "--storage", "tests/data/benchmarks", "-o", f"{t}/x.json"],
            e,
        ),
        (
            "export wrong suffix",
            ["export", "--storage", "tests/data/benchmarks", "-o", f"{t}/x.txt"],
            e,
        ),
        (
            "export output in /proc",
            ["export", "--storage", "tests/data/benchmarks", "-o", "/proc/x.json"],
            e,
        ),
        ("export without -o", ["export", "--storage", "tests/data/benchmarks"], e),
        (
            "plot output in /proc",
            ["plot", "--storage", "tests/data/benchmarks", "-o", "/proc/figs"],
            e,
        ),
        # trace, profile
        ("trace missing file", ["trace", "load", f"{t}/missing.sqlite"], e),
        ("trace not a database", ["trace", "breakdown", f"{t}/trace.sqlite"], e),
        ("trace binary .json input", ["trace", "load", f"{t}/binary.json"], e),
        (
            "trace chrome would overwrite an unnamed file",
            ["trace", "chrome", f"{t}/twin.sqlite"],
            e,
        ),
        (
            "trace chrome output in /proc",
            ["trace", "chrome", f"{t}/trace.sqlite", "-o", "/proc/t.json"],
            e,
        ),
        (
            "trace load csv folder missing",
            ["trace", "load", f"{t}/trace.sqlite", "--csv", "/nonexistent/a/b"],
            e,
        ),
        ("profile without command", ["profile"], e),
        ("profile nsys missing", ["profile", "--nsys", "/nonexistent/nsys", "--", "solve", "8"], e),
        # report
        ("report unknown paper", ["report", "nopaper"], e),
        ("report unknown artefact", ["report", "plauth", "nothing"], e),
        ("report output wrong suffix", ["report", "table3", "--model-only", "-o", f"{t}/t.png"], e),
        ("report figure output .md", ["report", "figure", "-o", f"{t}/t.md"], e),
        ("report GPU artefact without GPU", ["report", "table2"], e),
        (
            "report carneiro history binary",
            ["report", "carneiro", "table2", "--history", f"{t}/binary.json"],
            e,
        ),
        ("report kerbl from empty", ["report", "kerbl", "fig1", "--from", f"{t}/empty.json"], e),
        # characterize
        ("characterize from missing", ["characterize", "launch", "--from", f"{t}/missing.json"], e),
        ("characterize from binary", ["characterize", "launch", "--from", f"{t}/binary.json"], e),
        ("characterize from empty", ["characterize", "reserve", "--from", f"{t}/empty.json"], e),
        (
            "characterize from truncated",
            ["characterize", "launch", "--from", f"{t}/truncated.json"],
            e,
        ),
        ("characterize from foreign", ["characterize", "ideal", "--from", f"{t}/foreign.json"], e),
        ("characterize from a list", ["characterize", "efficiency", "--from", f"{t}/list.json"], e),
        (
            "characterize timeline from foreign",
            ["characterize", "timeline", "--from", f"{t}/foreign.json"],
            e,
        ),
        (
            "characterize output wrong suffix",
            [
                "characterize",
                "launch",
                "--from",
                "tests/data/characterize/synthetic-launch.json",
                "-o",
                f"{t}/x.txt",
            ],
            e,
        ),
        (
            "characterize figure folder missing",
            [
                "characterize",
                "launch",
                "--from",
                "tests/data/characterize/synthetic-launch.json",
                "--figure",
                "/nonexistent/f.png",
            ],
            e,
        ),
        ("characterize counts garbage", ["characterize", "launch", "--counts", "12,abc"], e),
        ("characterize blocks N garbage", ["characterize", "blocks", "--n", "17:x"], e),
        ("characterize blocks paths unknown", ["characterize", "blocks", "--paths", "host,cdp"], e),
        ("characterize without GPU", ["characterize", "launch"], e),
        # queue-bench
        ("queue-bench from binary", ["queue-bench", "--from", f"{t}/binary.json"], e),
        ("queue-bench from foreign", ["queue-bench", "--from", f"{t}/foreign.json"], e),
        ("queue-bench fill zero", ["queue-bench", "--fill", "0"], e),
        (
            "queue-bench output folder missing",
            [
                "queue-bench",
                "--from",
                "tests/data/queue-bench-h200.json",
                "-o",
                "/nonexistent/q.json",
            ],
            e,
        ),
        ("queue-bench without GPU", ["queue-bench"], e),
        # env
        ("env unknown option", ["env", "--bogus"], e),
    ]


def _name(action) -> str:
    return action.option_strings[0] if action.option_strings else action.dest


def is_number(action) -> bool:
    """Whether the option takes a number (or a list of them)."""
    return getattr(action, "number", None) is not None or getattr(
        getattr(action, "option", None), "numeric", False
    )


def command_options() -> list[tuple[tuple[str, ...], object]]:
    """(command words, argparse action) for every option of every command."""
    from nqprof.cli import build_parser

    found: list[tuple[tuple[str, ...], object]] = []

    def walk(parser, words: tuple[str, ...]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                seen: set[int] = set()
                for name, child in action.choices.items():
                    if id(child) not in seen:
                        seen.add(id(child))
                        walk(child, (*words, name))
            elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
                found.append((words, action))

    walk(build_parser(), ())
    return found


def unclassified() -> list[str]:
    """Options of the commands that are neither number options nor in TEXT_OPTIONS, options
    that let argparse convert a number (type=int or float), and --nq-* options without cases."""
    out = [
        f"nqprof {' '.join(words)} {_name(a)}"
        for words, a in command_options()
        if not is_number(a) and _name(a) not in TEXT_OPTIONS
    ]
    out += [
        f"nqprof {' '.join(words)} {_name(a)}: "
        f"type={a.type.__name__} (use nqprof.numeric.add_number)"
        for words, a in command_options()
        if a.type in (int, float)
    ]
    out += [
        flag
        for flag in plugin_options()
        if flag not in _plugin_numbers() and flag not in PLUGIN_TEXT_CASES
    ]
    return out


def _bad_numbers(name: str) -> list[str]:
    key = name.lstrip("-").removeprefix("nq-")
    return [v for v in BAD_NUMBERS if not (v == "0" and key in ZERO_IS_VALID)]


def number_cases(tmp: Path) -> list[Case]:
    """Every number option of every command given every bad number; NQPROF_TIMEOUT and a
    strategy parameter of solve, sweep and plan too."""
    out = []
    for words, action in command_options():
        if not is_number(action):
            continue
        extra, n = CONTEXT.get(words, ([], None))
        extra = [a.format(tmp=tmp) for a in extra]
        name = _name(action)
        for bad in _bad_numbers(name):
            if action.option_strings:
                argv = [*words, *extra, *([n] if n else []), *NEEDS.get(name, []), f"{name}={bad}"]
                names = name
            else:  # the positional N
                argv = [*words, *extra, "--", bad]
                names = "N"
            option = f"{' '.join(words)} {name}"
            out.append(Case(f"{option} {bad!r}", argv, names=names, option=option))
    for bad in BAD_NUMBERS:
        out.append(
            Case(
                f"NQPROF_TIMEOUT {bad!r}",
                ["solve", "8"],
                {"NQPROF_TIMEOUT": bad},
                names="NQPROF_TIMEOUT",
                option="solve NQPROF_TIMEOUT",
            )
        )
    for before, param in PARAM_CASES:
        strategy, key = param.split(".")
        for bad in _bad_numbers(param):
            out.append(
                Case(
                    f"{before[0]} --param {key} {bad!r}",
                    [*before, f"--param={key}={bad}"],
                    names=key,
                    option=f"{before[0]} --param {param}",
                )
            )
    return out


def plugin_options() -> list[str]:
    """The plugin's --nq-* options, as its pytest_addoption registers them."""
    from nqprof import plugin

    flags: list[str] = []

    class Group:
        def addoption(self, *names, **kwargs):
            flags.append(names[0])

    class Parser:
        def getgroup(self, *args, **kwargs):
            return Group()

    plugin.pytest_addoption(Parser())
    return flags


def _plugin_numbers() -> list[str]:
    from nqprof.options import OPTIONS, PLUGIN_NUMBER_FLAGS

    return [opt.flag for opt in OPTIONS if opt.numeric] + list(PLUGIN_NUMBER_FLAGS)


def plugin_cases(tmp: Path) -> list[Case]:
    """Every --nq-* option's bad values (numbers for the numeric ones), and NQPROF_TIMEOUT, in
    a pytest run of one nqprof benchmark."""
    out = []
    for flag in _plugin_numbers():
        for bad in _bad_numbers(flag):
            out.append(
                Case(f"{flag} {bad!r}", [*PLUGIN_BASE, f"{flag}={bad}"], names=flag, pytest=True)
            )
    for bad in BAD_NUMBERS:
        out.append(
            Case(
                f"NQPROF_TIMEOUT {bad!r}",
                PLUGIN_BASE,
                {"NQPROF_TIMEOUT": bad},
                names="NQPROF_TIMEOUT",
                pytest=True,
            )
        )
    for bad in _bad_numbers("multicore.depth"):
        out.append(
            Case(
                f"--nq-param multicore.depth={bad!r}",
                [*PLUGIN_BASE, "--nq-strategy=multicore", f"--nq-param=multicore.depth={bad}"],
                names="--nq-param",
                pytest=True,
            )
        )
    for flag, items in PLUGIN_TEXT_CASES.items():
        for what, args, env in items:
            out.append(
                Case(
                    f"{flag}: {what}",
                    [*PLUGIN_BASE, *(a.format(tmp=tmp) for a in args)],
                    env,
                    names=flag,
                    pytest=True,
                )
            )
    return out


def make_files(tmp: Path) -> None:
    """The plugin cases' benchmark (the files of :func:`cases` are made by it)."""
    (tmp / "plugin").mkdir(exist_ok=True)
    (tmp / "plugin" / "test_nq.py").write_text(PLUGIN_TEST)
    (tmp / "plugin" / "pytest.ini").write_text("[pytest]\n")


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


@dataclass
class Row:
    case: Case
    command: str
    code: int | str
    shown: str
    problem: str  # "" when the case ended as it must


def run(case: Case, tmp: str) -> Row:
    if case.pytest:
        argv = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--benchmark-disable",
            *case.argv,
            "test_nq.py",
        ]
        cwd, prog = Path(tmp) / "plugin", "pytest"
    else:
        argv, cwd, prog = [sys.executable, "-m", "nqprof.cli", *case.argv], ROOT, "nqprof"
    try:
        out = subprocess.run(
            argv,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, **case.env},
        )
        code, stderr, stdout = out.returncode, out.stderr, out.stdout
    except subprocess.TimeoutExpired:
        code, stderr, stdout = "timeout", "", ""
    shown = (first_line(stderr) or first_line(stdout)).replace(tmp, "$TMP")
    if "Traceback" in stderr:
        problem = "TRACEBACK"
    elif "INTERNALERROR" in stderr + stdout:
        problem = "INTERNALERROR"
    elif code == "timeout":
        problem = "TIMEOUT"
    elif case.code is not None and code == 0:
        problem = "ACCEPTED"
    elif case.code is not None and (code != case.code or case.names not in shown):
        problem = "UNNAMED"
    else:
        problem = ""
    command = (
        " ".join(f"{k}={shlex.quote(v)}" for k, v in case.env.items())
        + (" " if case.env else "")
        + prog
        + " "
        + " ".join(shlex.quote(a.replace(tmp, "$TMP")) for a in case.argv)
    )
    return Row(case, command, code, shown, problem)


#: What a row's problem is called in the summary.
PROBLEMS = {
    "TRACEBACK": "with a traceback",
    "INTERNALERROR": "with an INTERNALERROR",
    "TIMEOUT": "timed out",
    "ACCEPTED": "accepted (exit 0)",
    "UNNAMED": "not one line naming the option with the exit code",
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default=str(ROOT / ".bad-inputs.md"))
    ap.add_argument(
        "-k",
        dest="select",
        metavar="TEXT",
        help="only the cases whose description or command has TEXT",
    )
    ap.add_argument("-j", "--jobs", type=int, default=2, help="commands run at once (default 2)")
    args = ap.parse_args(argv)
    missing = unclassified()
    if missing:
        print(
            "options neither numbers nor in TEXT_OPTIONS/PLUGIN_TEXT_CASES: " + "; ".join(missing),
            file=sys.stderr,
        )
        return 1
    with tempfile.TemporaryDirectory(prefix="nqprof-bad-") as tmp:
        make_files(Path(tmp))
        todo = [Case(what, nq, env) for what, nq, env in cases(Path(tmp))]
        todo += number_cases(Path(tmp)) + plugin_cases(Path(tmp))
        if args.select:
            todo = [c for c in todo if args.select in c.what or args.select in " ".join(c.argv)]
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            rows = []
            for row in pool.map(lambda c: run(c, tmp), todo):
                rows.append(row)
                mark = f"  {row.problem}" if row.problem else ""
                print(
                    f"{row.code!s:>7}  {row.command}{mark}\n         {row.shown[:160]}", flush=True
                )
    lines = [
        f"# Bad inputs ({len(rows)}), run with `python tools/bad_inputs.py`",
        "",
        "| # | bad input | command | exit | first line printed |",
        "|---|---|---|---|---|",
    ]
    for i, row in enumerate(rows, 1):
        cell = row.shown.replace("|", "\\|")
        command = row.command.replace("|", "\\|")
        lines.append(
            f"| {i} | {row.case.what} | `{command}` | "
            f"{row.code}{' ' + row.problem if row.problem else ''} | {cell} |"
        )
    Path(args.output).write_text("\n".join(lines) + "\n")
    counts = {p: sum(r.problem == p for r in rows) for p in PROBLEMS}
    numbers = sum(r.case.names is not None and not r.case.pytest for r in rows)
    plugin = sum(r.case.pytest for r in rows)
    print(
        f"{len(rows)} bad inputs ({numbers} numbers on the command line, {plugin} pytest runs of "
        f"the plugin) in {time.perf_counter() - t0:.0f} s: "
        + ", ".join(f"{n} {PROBLEMS[p]}" for p, n in counts.items())
        + f"; table in {args.output}"
    )
    return 1 if any(counts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
