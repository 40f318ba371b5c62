"""Bad input, on every command's side: output paths checked before the work and written
atomically, readers that fail in one line naming the file whatever the bytes, the one CLI
grammar (--json prints, -o writes, --param [STRATEGY.]KEY=V), limits checked before host
work, the plan's chunk sizing, and the known counts pinned independently of nqprof."""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import string
import sys

import pytest
from cli_process import nqprof
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from nqprof import files, options, problem, runner, strategies
from nqprof.cli import main
from nqprof.errors import InputError, NqprofError

# --- OEIS A000170, typed in from https://oeis.org/A000170 (not from nqprof.problem) --------

A000170 = [
    1,
    0,
    0,
    2,
    10,
    4,
    40,
    92,
    352,
    724,
    2680,
    14200,
    73712,
    365596,
    2279184,
    14772512,
    95815104,
    666090624,
    4968057848,
    39029188884,
    314666222712,
    2691008701644,
    24233937684440,
    227514171973736,
    2207893435808352,
    22317699616364044,
    234907967154122528,
]


def test_known_counts_are_oeis_a000170():
    assert problem.KNOWN_COUNTS == {n: count for n, count in enumerate(A000170, start=1)}
    assert problem.MAX_N == 27
    assert [problem.known_count(n) for n in range(1, 28)] == A000170


# --- the plan: chunks sized for the chunk they launch, by the largest subtrees --------------


def _plan(name, n, given=None):
    from nqprof.strategies import get
    from nqprof.strategies.cdp import accounting as cc
    from nqprof.strategies.cdp.plan import GIB, make_plan
    from nqprof.subproblems import BOARD_UPLOAD_BYTES, expand

    s = get(name)
    params = s.resolve(n, given or {})
    rec = s.recursion(n, params, len(expand(n, params["depth"])))
    return rec, make_plan(
        rec, int(139.0 * GIB), params, board_bytes=BOARD_UPLOAD_BYTES, counter_bytes=cc.WORDS * 8
    )


@pytest.mark.parametrize("name,n,given", [("dp1", 16, {"z": 3}), ("dp1", 13, {"z": 2, "depth": 3})])
def test_a_chunked_plan_sets_the_limits_of_the_chunk_it_launches(name, n, given):
    """The limits come from the chunk launched (c > 1 boards), not from the one-board chunk
    the search starts from: the same as forcing chunk=c, and above one board's demand."""
    rec, plan = _plan(name, n, given)
    assert plan.chunks > 1 and plan.chunk > 1
    assert plan.limits.pending >= rec.demand(plan.chunk).pending > rec.demand(1).pending
    _, forced = _plan(name, n, {**given, "chunk": plan.chunk})
    assert forced.limits == plan.limits


@pytest.mark.parametrize("n,depth", [(13, 3), (16, 4)])
def test_chunk_share_carries_the_largest_subtrees_not_the_uniform_share(n, depth):
    from nqprof.strategies.cdp.plan import chunk_share
    from nqprof.subproblems import expand

    host = len(expand(n, depth))
    for c in (1, 7, host // 7):
        assert chunk_share(n, depth, host, c) > 1.2 * c / host, c


def test_a_chunks_demand_uses_the_chunk_share():
    """dp1 N=16 z=3: a chunk of 7 host boards needs more pending launches than 7/9844 of the run."""
    from nqprof.strategies.cdp.plan import chunk_share

    rec, plan = _plan("dp1", 16, {"z": 3})
    host = rec.host_boards
    uniform = math.ceil(rec.demand(host).pending * plan.chunk / host)
    assert rec.demand(plan.chunk).pending > 1.2 * uniform
    assert (
        rec.demand(plan.chunk).pending
        >= rec.demand(host).pending * chunk_share(16, 4, host, plan.chunk) * 0.99
    )


# --- limits before work ------------------------------------------------------------------------


def test_an_expansion_that_cannot_fit_is_refused_before_it_starts():
    from nqprof.subproblems import boards_estimate, boards_lower_bound, check_expansion, expand

    assert boards_lower_bound(16, 4) <= len(expand(16, 4))
    assert 0.8 < boards_estimate(16, 6) / len(expand(16, 6)) < 1.25
    check_expansion(16, 4, available=2**30)
    with pytest.raises(InputError, match=r"N=27: expanding 9 rows .* more than the 1.0 GiB"):
        check_expansion(27, 9, available=2**30)


def test_plan_at_a_huge_depth_is_one_line(capsys):
    assert main(["plan", "27", "-s", "dp2", "-p", "depth=12"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "use a smaller depth" in err


# --- output files ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path,message",
    [
        ("/proc/x.json", "cannot write in /proc"),
        ("/nonexistent/dir/x.json", "the folder /nonexistent/dir does not exist"),
        ("{tmp}", "is a folder, not a file"),
        ("{tmp}/x.txt", "must end with .json"),
        ("", "an empty file name"),
    ],
)
def test_sweep_output_checked_before_the_work(path, message, tmp_path, capsys, monkeypatch):
    ran = []
    monkeypatch.setattr("nqprof.runner.solve", lambda *a, **k: ran.append(a))
    argv = ["sweep", "-s", "serial", "--n", "8", "-q", "-o", path.format(tmp=tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("nqprof: error: ") and err.count("\n") == 1 and message in err, err
    assert not ran


def test_outputs_are_written_atomically_and_whole(tmp_path, capsys):
    out = tmp_path / "sweep.json"
    out.write_text("old")
    assert (
        main(
            [
                "sweep",
                "-s",
                "serial",
                "--n",
                "6:7",
                "-q",
                "-o",
                str(out),
                "--rounds",
                "1",
                "--warmup",
                "0",
                "--force",
            ]
        )
        == 0
    )
    records = json.loads(out.read_text())
    assert [r["n"] for r in records] == [6, 7] and os.listdir(tmp_path) == ["sweep.json"]
    assert main(["solve", "8", "-o", str(tmp_path / "solve.json")]) == 0
    assert json.loads((tmp_path / "solve.json").read_text())["count"] == 92


def test_failed_write_leaves_nothing(tmp_path, monkeypatch):
    target = tmp_path / "x.json"
    monkeypatch.setattr(
        os, "replace", lambda *a: (_ for _ in ()).throw(OSError(28, "No space left on device"))
    )
    with pytest.raises(InputError, match="x.json: cannot be written \\(No space left on device\\)"):
        files.write_json(target, {"a": 1})
    assert os.listdir(tmp_path) == []


def test_trace_chrome_never_overwrites_an_unnamed_file(tmp_path, capsys):
    trace, twin = tmp_path / "run.sqlite", tmp_path / "run.json"
    trace.write_bytes(b"SQLite format 3\0")
    twin.write_text("mine")
    assert main(["trace", "chrome", str(trace)]) == 2
    assert "run.json exists: pass --force to replace it" in capsys.readouterr().err
    assert twin.read_text() == "mine"


def test_an_existing_output_is_replaced_only_with_force(tmp_path, capsys, monkeypatch):
    keep = tmp_path / "keep.json"
    keep.write_text('{"keep":"me"}')
    monkeypatch.chdir(tmp_path)
    ran = []
    real_solve = runner.solve
    monkeypatch.setattr(runner, "solve", lambda *a, **k: ran.append(a) or real_solve(*a, **k))
    assert main(["solve", "10", "-s", "serial", "-q", "-o", "keep.json"]) == 2
    err = capsys.readouterr().err
    assert err == "nqprof: error: --output keep.json exists: pass --force to replace it\n"
    assert keep.read_text() == '{"keep":"me"}' and not ran  # refused before the work
    assert main(["solve", "10", "-s", "serial", "-q", "-o", "keep.json", "--force"]) == 0
    assert json.loads(keep.read_text())["count"] == 724 and len(ran) == 1


#: A command writing ``{tmp}/FILE`` (a file that exists when it runs): each must refuse it in
#: one line before its work (no GPU, nsys, ncu or toolkit is looked for before the check).
WRITERS = [
    (["solve", "8", "-q", "-o", "{tmp}/FILE"], "s.json"),
    (["sweep", "-s", "serial", "--n", "8", "-q", "-o", "{tmp}/FILE"], "s.json"),
    (["history", "tests/data/benchmarks", "--csv", "{tmp}/FILE"], "h.csv"),
    (["plot", "--storage", "tests/data/benchmarks", "-o", "{tmp}"], "time_vs_n.png"),
    (["plot", "--storage", "tests/data/benchmarks", "-o", "{tmp}"], "speedup_over_serial.png"),
    (["build", "-o", "{tmp}/FILE"], "r.json"),
    (["matrix", "{tmp}", "-o", "{tmp}/FILE"], "m.txt"),
    (["matrix", "--history", "{tmp}", "--figure", "{tmp}/FILE"], "m.png"),
    (["trace", "load", "tests/data/nsys/cdp-sample.sqlite", "--csv", "{tmp}"], "kernels.csv"),
    (["trace", "chrome", "tests/data/nsys/cdp-sample.sqlite", "-o", "{tmp}/FILE"], "c.json"),
    (["profile", "--output", "{tmp}/p", "solve", "8"], "p.nsys-rep"),
    (["profile", "--output", "{tmp}/p", "solve", "8"], "p.sqlite"),
    (
        ["characterize", "launch", "--from", "{data}/synthetic-launch.json", "-o", "{tmp}/FILE"],
        "l.md",
    ),
    (["characterize", "launch", "-o", "{tmp}/FILE"], "l.json"),
    (["characterize", "launch", "--figure", "{tmp}/FILE"], "l.png"),
    (["characterize", "timeline", "12", "--chrome", "{tmp}/FILE"], "t.json"),
    (
        [
            "characterize",
            "efficiency",
            "--n",
            "8",
            "--strategies",
            "feinbube",
            "--out-dir",
            "{tmp}",
        ],
        "ncu-feinbube-8.csv",
    ),
    (
        ["characterize", "efficiency", "--n", "8", "--strategies", "dp3", "--out-dir", "{tmp}"],
        "ncu-dp3-8-record.ncu-rep",
    ),
    (["report", "table3", "--model-only", "-o", "{tmp}/FILE"], "t.md"),
    (["report", "plauth", "figure", "-o", "{tmp}/FILE"], "f.png"),
    (["report", "wang", "fig5", "-o", "{tmp}/FILE"], "w.md"),
    (["report", "kerbl", "fig1", "--outdir", "{tmp}"], "kerbl_fig1_unbalanced.png"),
    (["report", "carneiro", "table2", "--figure", "{tmp}/FILE"], "c.png"),
    (["queue-bench", "-o", "{tmp}/FILE"], "q.json"),
    (["queue-bench", "--figure", "{tmp}/FILE"], "q.png"),
]


@pytest.mark.parametrize(
    "argv,name", WRITERS, ids=lambda v: " ".join(v) if isinstance(v, list) else v
)
def test_every_command_refuses_an_existing_output_before_the_work(argv, name, tmp_path, capsys):
    data = os.path.join(os.path.dirname(__file__), "data", "characterize")
    existing = tmp_path / name
    existing.write_text("mine")
    argv = [a.format(tmp=tmp_path, data=data).replace("FILE", name) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("nqprof: error: ") and err.count("\n") == 1, err
    assert err.endswith(f" {existing} exists: pass --force to replace it\n"), err
    assert existing.read_text() == "mine"


def _parsers(parser, words=()):
    """(command words, parser) of every command: a walk of its own, not nqprof.cli's."""
    yield words, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _parsers(child, (*words, name))


#: The option names that write a file (or files into a folder) wherever they appear.
OUTPUT_FLAGS = {"-o", "--output", "--csv", "--figure", "--outdir", "--out-dir", "--chrome"}


def test_every_output_option_comes_with_force():
    from nqprof.cli import build_parser

    writers, forced = set(), set()
    for words, parser in _parsers(build_parser()):
        for action in parser._actions:
            if set(action.option_strings) & OUTPUT_FLAGS or getattr(action, "writes", False):
                assert getattr(action, "writes", False), (words, action.option_strings)
                writers.add(" ".join(words))
        if "--force" in parser._option_string_actions:
            forced.add(" ".join(words))
    assert {
        "solve",
        "sweep",
        "history",
        "plot",
        "build",
        "matrix",
        "trace load",
        "trace chrome",
        "profile",
        "characterize launch",
        "characterize efficiency",
        "characterize timeline",
        "report table3",
        "report carneiro table2",
        "report plauth figure",
        "report kerbl fig1",
        "queue-bench",
    } <= writers
    assert forced == writers


@pytest.mark.parametrize(
    "argv,message",
    [
        (
            [
                "characterize",
                "launch",
                "--from",
                "{data}/synthetic-launch.json",
                "-o",
                "{tmp}/x.txt",
            ],
            "must end with .json or .md",
        ),
        (
            [
                "characterize",
                "launch",
                "--from",
                "{data}/synthetic-launch.json",
                "--figure",
                "/nonexistent/f.png",
            ],
            "does not exist",
        ),
        (
            ["queue-bench", "--from", "{data}/../queue-bench-h200.json", "-o", "{tmp}/none/q.json"],
            "does not exist",
        ),
        (["build", "-o", "{tmp}/r.txt"], "must end with .json"),
        (["matrix", "{tmp}", "-o", "/proc/m.txt"], "cannot write in /proc"),
        (["report", "table3", "--model-only", "-o", "{tmp}/t.png"], "must end with .md"),
        (["report", "figure", "-o", "{tmp}/t.md"], "must end with .png"),
        (["trace", "load", "{tmp}/t.sqlite", "--csv", "/proc/x/y"], "does not exist"),
    ],
)
def test_every_command_checks_its_outputs_first(argv, message, tmp_path, capsys):
    data = os.path.join(os.path.dirname(__file__), "data", "characterize")
    argv = [a.format(tmp=tmp_path, data=data) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("nqprof: error: ") and err.count("\n") == 1 and message in err, err


# --- the CLI grammar ---------------------------------------------------------------------------


def test_json_prints_the_records_in_sweep(capsys):
    assert (
        main(
            ["sweep", "-s", "serial", "--n", "8", "--json", "-q", "--rounds", "1", "--warmup", "0"]
        )
        == 0
    )
    (record,) = json.loads(capsys.readouterr().out)
    assert record["strategy"] == "serial" and record["count"] == 92


def test_sweep_param_without_strategy_applies_where_it_exists(capsys):
    assert (
        main(
            [
                "sweep",
                "-s",
                "serial,multicore",
                "--n",
                "8",
                "-p",
                "depth=2,3",
                "-q",
                "--rounds",
                "1",
                "--warmup",
                "0",
                "--json",
            ]
        )
        == 0
    )
    rows = json.loads(capsys.readouterr().out)
    assert [(r["strategy"], r["params"].get("depth")) for r in rows] == [
        ("serial", None),
        ("multicore", 2),
        ("multicore", 3),
    ]


def test_an_axis_of_a_strategy_not_selected_is_an_error(capsys):
    """It selected no case, and the sweep (or the plugin's run) ran without it."""
    assert main(["sweep", "-s", "serial", "--n", "8", "-p", "multicore.depth=1", "-q"]) == 2
    err = capsys.readouterr().err
    assert (
        "--param 'multicore.depth=1': multicore is not a selected strategy (selected: serial)"
        in err
    ), err


def test_sweep_skips_gpu_strategies_without_a_gpu(monkeypatch, capsys):
    monkeypatch.setattr("nqprof.cuda.device.gpu_available", lambda: (False, "no CUDA driver"))
    assert (
        main(["sweep", "-s", "feinbube,serial", "--n", "8", "-q", "--rounds", "1", "--warmup", "0"])
        == 0
    )
    out = capsys.readouterr().out
    assert "feinbube  8  -       skipped" in out and "needs a GPU: no CUDA driver" in out


@pytest.mark.parametrize(
    "params,message",
    [
        (["depth=3", "depth=4"], "--param 'depth' is given twice (depth=3, depth=4)"),
        (["0\n0=0", "0\n0=0"], "--param '0\\n0' is given twice ('0\\n0=0', '0\\n0=0')"),  # one line
        (["multicore.depth=3"], "names strategy 'multicore', but the run is serial"),
        (["depth=3,4"], "one run takes one value"),
        (["=3"], "--param takes [STRATEGY.]KEY=VALUE"),
        ([".depth=3"], "--param takes [STRATEGY.]KEY=VALUE"),
    ],
)
def test_solve_param_grammar(params, message, capsys):
    argv = ["solve", "8", "-s", "serial"]
    for p in params:
        argv += ["-p", p]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_solve_param_with_its_strategy_prefix(capsys):
    assert main(["solve", "8", "-s", "multicore", "-p", "multicore.depth=2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"]["depth"] == 2


def test_an_unknown_option_points_to_the_commands_help():
    out = nqprof("solve", "12", "--bogus", timeout=60)
    assert out.returncode == 2
    assert out.stderr == (
        "nqprof: error: unrecognized arguments: --bogus\nTry 'nqprof solve --help'.\n"
    )


# --- parsers (properties) ----------------------------------------------------------------------

TEXT = st.text(alphabet=string.printable + "é…\u00a0", max_size=30)
NUMBER_TEXT = st.one_of(
    TEXT,
    st.sampled_from(
        [
            "inf",
            "-inf",
            "nan",
            "Infinity",
            "1e308",
            "1e400",
            "-0",
            "+7",
            " 7 ",
            str(10**30),
            "1.5.2",
            "0x10",
            "1_000",
            "١٢",
            "²",
            "7.",
            ".5",
            "2e3",
        ]
    ),
    st.integers().map(str),
    st.floats().map(str),
)


@given(TEXT)
def test_n_list_parser_returns_valid_ns_or_one_line(text):
    try:
        ns = problem.parse_n_list(text)
    except InputError as exc:
        assert "\n" not in str(exc)
    else:
        assert ns and all(1 <= n <= 27 for n in ns) and len(set(ns)) == len(ns)


@given(st.lists(st.tuples(st.integers(1, 27), st.integers(1, 27)), min_size=1, max_size=5))
def test_n_list_parser_ranges(pairs):
    text = ",".join(f"{min(a, b)}:{max(a, b)}" for a, b in pairs)
    expected = list(dict.fromkeys(n for a, b in pairs for n in range(min(a, b), max(a, b) + 1)))
    assert problem.parse_n_list(text) == expected


# The grammar nqprof.numeric's docstring states: an integer is [+-]digits, a real number a
# decimal with an optional exponent; surrounding blanks are ignored; errors quote the text
# (repr'd, cut after 60 characters).
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_REAL_TEXT = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?", re.ASCII)


def _quoted(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:60] + "...")


def _integer_in(text: str, lo: int, hi: int, what: str):
    """(value, None) or (None, the error message) for an integer option."""
    value = text.strip()
    if _INTEGER_TEXT.fullmatch(value) and lo <= int(value) <= hi:
        return int(value), None
    return None, f"{what} must be an integer in {lo}..{hi}, got {_quoted(text)}"


def _expected_rounds(text: str):
    if text.strip() == "auto":
        return None, None
    return _integer_in(text, 1, 100_000, "the number of rounds (or auto)")


def _expected_warmup(text: str):
    return _integer_in(text, 0, 100_000, "the number of warm-up rounds")


def _expected_timeout(text: str):
    value = text.strip()
    if _REAL_TEXT.fullmatch(value):
        seconds = float(value)
    elif value.lower() in ("inf", "+inf", "infinity", "+infinity"):
        seconds = math.inf
    else:
        seconds = math.nan
    if seconds > 604800:
        return None, f"the timeout must be at most 604800 seconds (a week), got {_quoted(text)}"
    if not seconds > 0:
        return None, f"the timeout must be a positive number of seconds, got {_quoted(text)}"
    return seconds, None


def _list_items(text: str, what: str):
    """The items of a comma list, or (None, the error message) if one is empty."""
    items = [item.strip() for item in text.split(",")]
    if all(items):
        return items, None
    return None, f"{what} takes a comma-separated list without empty items, got {text!r}"


def _expected_strategies(text: str):
    names = strategies.names()
    items, message = _list_items(text, "the strategy list")
    if message:
        return None, message
    if items == ["all"]:
        return names, None
    unknown = [item for item in items if item not in names]
    if unknown:
        return None, (
            f"unknown strategy {', '.join(map(repr, unknown))} (known: all, {', '.join(names)})"
        )
    return list(dict.fromkeys(items)), None


def _expected_param_axis(text: str):
    names = strategies.names()
    target, sep, values = text.partition("=")
    strategy, dot, key = target.strip().partition(".")
    if not (sep and dot and strategy and key):
        return None, f"a parameter axis is written [strategy.]key=value[,value...], got {text!r}"
    if strategy not in names:
        return None, f"unknown strategy {strategy!r} in {text!r} (known: {', '.join(names)})"
    items, message = _list_items(values, f"the values of {target.strip()}")
    return (
        (None, message) if message else ((strategy, key.strip(), list(dict.fromkeys(items))), None)
    )


_NAMES = st.sampled_from([*strategies.names(), "all", " serial ", "nope", ""])
#: Per parser: the texts it is fed (numbers, and lists that are sometimes right) and what it
#: must answer.
PARSER_CASES = {
    "parse_rounds": (NUMBER_TEXT | st.just(" auto "), _expected_rounds),
    "parse_warmup": (NUMBER_TEXT, _expected_warmup),
    "parse_timeout": (NUMBER_TEXT, _expected_timeout),
    "parse_strategies": (
        NUMBER_TEXT | st.lists(_NAMES, min_size=1, max_size=4).map(",".join),
        _expected_strategies,
    ),
    "parse_param_axis": (
        NUMBER_TEXT
        | st.builds(
            lambda name, key, values: f"{name}.{key}={values}",
            _NAMES,
            st.sampled_from(["depth", " block ", ""]) | TEXT,
            st.lists(st.sampled_from(["4", " 5", "4", ""]) | TEXT, max_size=3).map(",".join),
        ),
        _expected_param_axis,
    ),
}


@pytest.mark.parametrize("name", sorted(PARSER_CASES))
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_option_parsers_return_the_value_or_raise_the_message(name, data):
    texts, expected = PARSER_CASES[name]
    text = data.draw(texts)
    value, message = expected(text)
    if message is None:
        assert getattr(options, name)(text) == value
    else:
        with pytest.raises(InputError) as exc:
            getattr(options, name)(text)
        assert str(exc.value) == message


@settings(max_examples=60, deadline=None)
@given(strategy=TEXT, n=TEXT, rounds=TEXT)
def test_command_line_errors_are_one_line_whatever_the_text(strategy, n, rounds):
    """Every InputError reaches the terminal as one line, even one quoting a newline: the
    first bad option's, in the order the options are read (strategy, N, rounds). A text that
    argparse takes for an option is argparse's usage error: one line and the pointer to the
    command's help."""
    import contextlib
    import io

    expected = None
    for flag, parse, text in (
        ("--strategy", options.parse_strategies, strategy),
        ("--n", options.parse_n_values, n),
        ("--rounds", options.parse_rounds, rounds),
    ):
        try:
            parse(text)
        except InputError as exc:
            message = str(exc).replace("\r", "\\r").replace("\n", "\\n")
            expected = f"nqprof: error: {flag}: {message}\n"
            break
    assume(expected is not None)  # all three right: a real sweep, not this test's business
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = main(
                ["sweep", "-s", strategy, "--n", n, "--rounds", rounds, "-q", "--warmup", "0"]
            )
        except SystemExit as exc:  # argparse: a text that looks like an option
            assert exc.code == 2
            assert any(t.startswith("-") for t in (strategy, n, rounds))
            lines = err.getvalue().split("\n")
            assert lines[0].startswith("nqprof: error: ") and lines[1:] == [
                "Try 'nqprof sweep --help'.",
                "",
            ], err.getvalue()
            return
    assert (code, out.getvalue(), err.getvalue()) == (2, "", expected)


@given(st.lists(TEXT, max_size=4))
def test_solve_param_parser(items):
    from nqprof.options import solve_params

    try:
        params = solve_params(items, "serial")
    except InputError as exc:
        assert "\n" not in str(exc)
    else:
        assert len(params) == len(items) and all("," not in v for v in params.values())


#: An axis as a user may write it: with or without a strategy, a key some strategy has or not.
AXIS_TEXT = TEXT | st.builds(
    lambda prefix, key, values: f"{prefix}{key}={values}",
    st.sampled_from(["", "serial.", "multicore.", "feinbube.", " feinbube .", "dp3.", "nope."]),
    st.sampled_from(["depth", " depth ", "block", "threads", "nope"]),
    st.lists(st.sampled_from(["2", " 3", "4", "3", "x"]), min_size=1, max_size=3).map(",".join),
)


@settings(max_examples=150)
@given(st.lists(AXIS_TEXT, max_size=3))
def test_sweep_axes_parser(items):
    """An axis without a strategy is the axis of each selected strategy that has the key;
    the settings hold each strategy's keys and their values (blanks dropped, repeats once);
    anything else is one line naming --param."""
    from nqprof.options import sweep_params

    selected = ["serial", "multicore", "feinbube"]
    try:
        axes = sweep_params(items, selected)
        settings_ = options.parse_settings({options.PARAM_AXIS.dest: axes}, prefix="--")
    except InputError as exc:
        assert str(exc).startswith("--param") and "\n" not in str(exc), str(exc)
        return
    expected: dict[str, dict[str, tuple[str, ...]]] = {}
    for item in items:
        target, _, values = item.partition("=")
        name, dot, key = target.strip().partition(".")
        owners = (
            [name.strip()]
            if dot
            else [
                s for s in selected if any(p.name == name.strip() for p in strategies.get(s).params)
            ]
        )
        for owner in owners:
            expected.setdefault(owner, {})[(key if dot else name).strip()] = tuple(
                dict.fromkeys(v.strip() for v in values.split(","))
            )
    assert settings_.axes == expected


# --- readers fed arbitrary bytes ---------------------------------------------------------------

CONTENT = st.one_of(
    st.binary(max_size=200),
    st.text(max_size=80).map(str.encode),
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False)
        | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
        ),
        max_leaves=10,
    ).map(lambda d: json.dumps(d).encode()),
    st.sampled_from(
        [
            b"",
            b"\xff\xfe\x00",
            b'{"rows": [',
            b'{"kind": "launch", "points": [{}]}',
            b'{"format": "nqprof-cluster-checkpoint", "version": 1}',
            b'{"toolkit": {}, "kernels": [1]}',
            b'{"rows": [{"variant": 1}]}',
            b"[]",
            b"null",
            b"SQLite format 3\x00" + b"\x00" * 90,
        ]
    ),
)


def _readers():
    from nqprof import queuebench
    from nqprof.cluster import checkpoint
    from nqprof.cuda import nvcc

    return {
        "json": lambda p: files.read_json(p, "input"),
        "checkpoint": lambda p: checkpoint.load(str(p)),
        "queue-bench": queuebench.load,
        "resource-table": nvcc.load_json,
    }


@pytest.mark.parametrize("reader", ["json", "checkpoint", "queue-bench", "resource-table"])
@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=CONTENT)
def test_readers_fail_in_one_line_naming_the_file(reader, data, tmp_path):
    path = tmp_path / f"in-{reader}.json"
    path.write_bytes(data)
    try:
        _readers()[reader](path)
    except NqprofError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc), str(exc)


@pytest.mark.parametrize(
    "command",
    [
        ["characterize", "launch"],
        ["characterize", "reserve"],
        ["characterize", "ideal"],
        ["characterize", "efficiency"],
        ["characterize", "timeline"],
        ["queue-bench"],
        ["report", "kerbl", "fig1"],
    ],
)
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=CONTENT)
def test_from_readers_on_the_command_line(command, data, tmp_path, capsys):
    path = tmp_path / "in.json"
    path.write_bytes(data)
    capsys.readouterr()
    code = main([*command, "--from", str(path)])
    err = capsys.readouterr().err
    if code:
        assert code == 2 and err.startswith("nqprof: error: ") and err.count("\n") == 1, err
        assert str(path) in err, err


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=CONTENT)
def test_trace_reader_fails_in_one_line(data, tmp_path, capsys):
    pytest.importorskip("pandas")
    path = tmp_path / "in.sqlite"
    path.write_bytes(data)
    capsys.readouterr()
    assert main(["trace", "breakdown", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nqprof: error: ") and err.count("\n") == 1 and str(path) in err, err


@pytest.mark.slow
def test_a_bad_environment_variable_does_not_break_help():
    """cli/ reads no environment variable at import time: --help and strategies work with a bad
    NQPROF_TIMEOUT; a command that uses it names it in one line."""
    env = {**os.environ, "NQPROF_TIMEOUT": "abc"}
    for argv in (["--help"], ["strategies"], ["plan", "12", "-s", "dp2"]):
        out = nqprof(*argv, env=env, timeout=60)
        assert out.returncode == 0 and "Traceback" not in out.stderr, (argv, out.stderr)
    out = nqprof("solve", "8", env=env, timeout=60)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "NQPROF_TIMEOUT" in out.stderr, (
        out.stderr
    )


# --- numbers: one grammar, finite and in range, from every option and variable ---------------


def _bad_inputs():
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "tools"))
    try:
        import bad_inputs
    finally:
        sys.path.pop(0)
    return bad_inputs


@settings(max_examples=300, deadline=None)
@given(NUMBER_TEXT)
def test_a_number_is_finite_and_in_range_or_one_line(text):
    from nqprof.numeric import Integer, Real

    for parse, check in (
        (Integer(-3, 50, "x"), lambda v: isinstance(v, int) and -3 <= v <= 50),
        (Integer(4, 16, "y", choices=(4, 8, 16)), lambda v: v in (4, 8, 16)),
        (Real(0, 1e6, "z", unit="s"), lambda v: math.isfinite(v) and 0 < v <= 1e6),
        (Real(-1, 1, "w", above=False), lambda v: -1 <= v <= 1),
    ):
        try:
            value = parse(text)
        except InputError as exc:
            assert "\n" not in str(exc) and str(exc).startswith(parse.what + " must be "), str(exc)
        else:
            assert check(value), (parse, text, value)


@pytest.mark.parametrize("text", [*_bad_inputs().BAD_NUMBERS, "١", "٣"])  # and other digits
def test_bad_numbers_are_refused(text):
    from nqprof.numeric import Integer, Real

    for parse in (Integer(1, 1000, "the count"), Real(0, 1000, "the size", unit="GiB")):
        with pytest.raises(InputError, match=r"^the (count|size) must be .*, got '"):
            parse(text)


def test_numbers_in_the_grammar():
    from nqprof.numeric import Integer, Real

    assert [Integer(0, 9)(t) for t in (" 7 ", "+3", "0", "-0")] == [7, 3, 0, 0]
    assert [Real(0, 1e4)(t) for t in ("2e3", ".5", "7.", " 1.25 ")] == [2000.0, 0.5, 7.0, 1.25]
    with pytest.raises(
        InputError, match=r"^the timeout must be at most 10000 seconds \(a week\), got 'inf'$"
    ):
        Real(0, 1e4, "the timeout", unit="seconds", why="a week")("inf")
    with pytest.raises(
        InputError, match=r"^the timeout must be a positive number of seconds, got 'nan'$"
    ):
        Real(0, 1e4, "the timeout", unit="seconds")("nan")


def test_a_timeout_is_one_every_wait_takes():
    """inf and 1e10 overflowed the watchdog's waits; the largest timeout nqprof takes does not."""
    import multiprocessing
    import threading

    for text in ("inf", "1e10", "1e308", "nan", "-1", "0"):
        with pytest.raises(InputError, match="the timeout must be"):
            options.parse_timeout(text)
    assert (
        options.parse_timeout(str(options.MAX_TIMEOUT))
        == options.MAX_TIMEOUT
        <= threading.TIMEOUT_MAX
    )
    here, there = multiprocessing.Pipe()
    try:
        there.send(1)
        assert here.poll(
            options.MAX_TIMEOUT
        )  # ready: returns at once, after converting the timeout
        with pytest.raises(OverflowError):
            here.poll(1e10)
    finally:
        here.close()
        there.close()
    lock = threading.Lock()
    assert lock.acquire(timeout=options.MAX_TIMEOUT)
    lock.release()


def test_a_strategy_parameter_and_launch_counts_are_numbers_in_the_grammar():
    """'0_3' and '٣' were depth 3; '²' was a ValueError's traceback from --counts."""
    from nqprof.characterize.launch import MAX_COUNT, parse_counts
    from nqprof.strategies import get

    depth = get("multicore").param("depth")
    assert depth.parse(" 3 ", 12) == depth.parse("+3", 12) == 3
    for bad in ("0_3", "٣", "0x3", "3.0", "inf", ""):
        with pytest.raises(InputError, match="parameter depth must be an integer"):
            depth.parse(bad, 12)
    assert parse_counts("32, 1K,1M") == [32, 1024, 1 << 20]
    for bad in ("²", "0", "-1", str(MAX_COUNT + 1), "1_000", "99999999999999999999M", "1e3"):
        with pytest.raises(InputError, match="--counts takes a comma list of launch counts"):
            parse_counts(bad)


def test_every_option_of_every_command_is_a_number_or_listed_as_text():
    """tools/bad_inputs.py finds the number options in the parsers: every other option of every
    command (and of the plugin) must be listed as text, so that a new one is never forgotten."""
    bad_inputs = _bad_inputs()
    assert bad_inputs.unclassified() == []
    flags = {
        bad_inputs._name(a) for _, a in bad_inputs.command_options() if bad_inputs.is_number(a)
    }
    assert {
        "--timeout",
        "--rounds",
        "--warmup",
        "--workers",
        "--free-gib",
        "--fill",
        "--block",
        "n",
    } <= flags
    assert set(bad_inputs.plugin_options()) >= {
        "--nq-timeout",
        "--nq-param",
        "--nq-cluster",
        "--nq-trace-dir",
    }


def test_an_unlisted_option_is_reported(monkeypatch):
    bad_inputs = _bad_inputs()
    monkeypatch.setattr(bad_inputs, "TEXT_OPTIONS", bad_inputs.TEXT_OPTIONS - {"--checkpoint"})
    monkeypatch.setattr(
        bad_inputs,
        "PLUGIN_TEXT_CASES",
        {k: v for k, v in bad_inputs.PLUGIN_TEXT_CASES.items() if k != "--nq-cluster"},
    )
    assert bad_inputs.unclassified() == ["nqprof solve --checkpoint", "--nq-cluster"]


def test_every_number_option_refuses_bad_numbers_in_one_line(tmp_path, capsys, monkeypatch):
    """In-process, a bad number for every number option of every command, NQPROF_TIMEOUT and
    strategy parameters: the i-th option the i-th bad number (tools/bad_inputs.py runs every
    one of them as a command). Nothing runs."""
    bad_inputs = _bad_inputs()
    by_option: dict[str, list] = {}
    for case in bad_inputs.number_cases(tmp_path):
        by_option.setdefault(case.option, []).append(case)
    assert len(by_option) > 80
    ran = []
    monkeypatch.setattr("nqprof.runner.solve", lambda *a, **k: ran.append(a))
    for i, cases in enumerate(by_option.values()):
        case = cases[i % len(cases)]
        with monkeypatch.context() as env:
            for name, value in case.env.items():
                env.setenv(name, value)
            code = main(case.argv)
        err = capsys.readouterr().err
        assert code == 2 and err.startswith("nqprof: error: ") and err.count("\n") == 1, (
            case.argv,
            err,
        )
        assert case.names in err.splitlines()[0], (case.argv, err)
    assert not ran


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["plan", "12", "-s", "dp2", "--free-gib", "inf"],
            "--free-gib must be at most 4096 GiB, got 'inf'",
        ),
        (
            ["plan", "12", "-s", "dp2", "--free-gib", "1e308"],
            "--free-gib must be at most 4096 GiB, got '1e308'",
        ),
        (
            ["solve", "8", "--cluster", "local", "--workers", "1e10"],
            "--workers must be an integer in 1..1024, got '1e10'",
        ),
        (
            ["solve", "8", "--cluster", "local", "--workers", str(10**30)],
            "--workers must be an integer in 1..1024",
        ),
        (
            ["characterize", "launch", "--block", "0x10"],
            "--block must be an integer in 1..1024, got '0x10'",
        ),
        (["characterize", "efficiency", "--n", "99"], "--n: N must be in 1..27, got 99"),
        (["queue-bench", "--bytes", "5"], "--bytes must be one of 4, 8, 16, got '5'"),
        (["queue-bench", "--fill", "1e3"], "--fill must be an integer in 1..64, got '1e3'"),
        (["report", "table2", "--z", "9"], "--z must be an integer in 1..8, got '9'"),
        (
            ["report", "table2", "--timeout", "inf"],
            "--timeout: the timeout must be at most 604800 seconds",
        ),
        (["solve", "--", "-inf"], "N must be an integer in 1..27, got '-inf'"),
    ],
)
def test_number_options_are_read_before_the_command_runs(argv, message, capsys):
    """One line naming the option, before anything else the command would do first (look for
    a GPU, start a cluster, plan)."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("nqprof: error: ") and err.count("\n") == 1 and message in err, err
