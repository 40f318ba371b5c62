"""The `nqprof` command as a user meets it: output, errors and exit codes."""

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_process import HEAVY, command_imports, nqprof

from nqprof.cli import main, parse_params
from nqprof.errors import InputError
from nqprof.strategies import all_strategies, get

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_solve_serial_14_prints_verified_count():
    out = nqprof("solve", "14", "--strategy", "serial")
    assert out.returncode == 0, out.stderr
    assert "count      365596  verified" in out.stdout


def test_solve_json_record():
    out = nqprof(
        "solve", "10", "--strategy", "multicore", "--param", "depth=3", "--repeats", "3", "--json"
    )
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    assert record["count"] == 724 and record["verified"] is True
    assert (
        record["params"]["depth"] == 3 and record["rounds"] == 3 and len(record["wall_times"]) == 3
    )


@pytest.mark.parametrize(
    "args,message",
    [
        (["solve", "0"], "N must be in 1..27, got 0"),
        (["solve", "40"], "N must be in 1..27, got 40"),
        (["solve", "abc"], "N must be an integer in 1..27"),
        (
            ["solve", "12", "-s", "multicore", "-p", "depth=12"],
            "parameter depth must be in 0..9 for N=12, got 12",
        ),
        (
            ["solve", "12", "-s", "feinbube", "-p", "block=0"],
            "parameter block must be in 1..1024 for N=12, got 0",
        ),
        (
            ["solve", "12", "-s", "feinbube", "-p", "block=2000"],
            "parameter block must be in 1..1024 for N=12, got 2000",
        ),
        (["solve", "12", "-s", "nosuch"], "unknown strategy 'nosuch' (known: serial, multicore"),
        (
            ["solve", "12", "-s", "feinbube", "-p", "colour=red"],
            "strategy feinbube has no parameter 'colour'",
        ),
        (["solve", "12", "-s", "feinbube", "-p", "depth"], "--param takes [STRATEGY.]KEY=VALUE"),
        (
            ["solve", "12", "-s", "feinbube", "-p", "opt=fast"],
            "parameter opt must be one of local, shared-stack",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message):
    out = nqprof(*args)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], out.stderr


@pytest.mark.parametrize(
    "args,message,command",
    [
        ([], "the following arguments are required: COMMAND", "nqprof"),
        (["bogus"], "argument COMMAND: invalid choice: 'bogus' (choose from 'solve', ", "nqprof"),
        (["solve"], "the following arguments are required: N", "nqprof solve"),
        (["solve", "12", "--bogus"], "unrecognized arguments: --bogus", "nqprof solve"),
        (
            ["compare", "--metric", "bad"],
            "argument --metric: invalid choice: 'bad'",
            "nqprof compare",
        ),
        (
            ["report", "plauth", "table2", "--bogus"],
            "unrecognized arguments: --bogus",
            "nqprof report plauth table2",
        ),
    ],
)
def test_a_usage_error_is_one_line_and_a_pointer_to_help(args, message, command):
    out = nqprof(*args, timeout=60)
    assert out.returncode == 2 and out.stdout == ""
    assert "Traceback" not in out.stderr
    first, *rest = out.stderr.splitlines()
    assert first.startswith(f"nqprof: error: {message}"), out.stderr
    assert rest == [f"Try '{command} --help'."], out.stderr


def test_solve_help_names_the_default_strategy(capsys):
    with pytest.raises(SystemExit):
        main(["solve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert (
        "--strategy STRATEGY, -s STRATEGY strategy name (see `nqprof strategies`; default: "
        "serial)" in text
    )
    assert main(["solve", "8", "-q", "--rounds", "1"]) == 0
    assert capsys.readouterr().out.startswith("strategy   serial\n")  # the default it names


def test_feinbube_shared_memory_overflow_names_the_fix():
    with pytest.raises(InputError, match=r"over the 48896 B limit: use block <= "):
        get("feinbube").resolve(19, {"opt": "shared-all", "block": 512})


def test_gpu_strategy_without_gpu_is_a_clean_error():
    from nqprof.cuda.device import gpu_available

    ok, _ = gpu_available()
    if ok:
        pytest.skip("a GPU is present")
    out = nqprof("solve", "8", "--strategy", "feinbube", "--quiet")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_strategies_lists_every_strategy_with_parameters(capsys):
    assert main(["strategies"]) == 0
    out = capsys.readouterr().out
    for s in all_strategies():
        assert s.name in out
        for p in s.params:
            assert p.name in out
    assert "1..N-1" in out and "default min(6, N-1)" in out


def test_env_reports_tools(capsys):
    assert main(["env", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    for key in ("gpu", "toolkit", "pycuda", "nvtx", "nsys", "ncu"):
        assert key in info


def test_parse_params():
    assert parse_params(["a=1", " b = x "]) == {"a": "1", "b": "x"}
    with pytest.raises(InputError):
        parse_params(["=3"])
    # report and characterize read --param through it: a repeated key is an error, as in solve
    with pytest.raises(InputError, match=r"--param 'a' is given twice \(a=1, a=2\)"):
        parse_params(["a=1", "a = 2"])


# -- nqprof sweep, report listing, progress, start-up ------------------------------------------


@pytest.mark.slow
def test_sweep_runs_the_grid_and_skips_rejected_cases(capsys):
    # depth=7 fits N=10 only: an axis value that no case accepts is an error of its own
    args = [
        "sweep",
        "--strategy",
        "serial,multicore",
        "--n",
        "8:10",
        "--param",
        "multicore.depth=2,7",
        "--rounds",
        "2",
        "--warmup",
        "0",
        "-q",
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert re.search(r"serial\s+8\s+-\s+92 verified\s+-\s+\S+ \S+\s+median of 2", out)
    assert re.search(r"multicore\s+9\s+depth=2\s+352 verified", out)
    assert re.search(r"multicore\s+8\s+depth=7\s+skipped .*depth must be in 0\.\.5 for N=8", out)
    # a value that no case accepts is a typo: an error, not a sweep of skips
    assert (
        main(
            ["sweep", "--strategy", "multicore", "--n", "8:9", "--param", "multicore.depth=9", "-q"]
        )
        == 2
    )
    assert "multicore.depth=9 is rejected by every case it is in" in capsys.readouterr().err


def test_sweep_reports_bad_options_in_one_line(capsys):
    assert main(["sweep", "--strategy", "serial", "--n", "10:8"]) == 2
    assert (
        capsys.readouterr().err.strip()
        == "nqprof: error: --n: the N range '10:8' is empty (write it low:high)"
    )


def test_sweep_shim_translates_the_old_form():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import sweep
    finally:
        sys.path.pop(0)
    assert sweep.translate(["dp3", "--n", "16:18", "--param", "depth=3,4", "--repeats", "3"]) == [
        "sweep",
        "--strategy",
        "dp3",
        "--n",
        "16:18",
        "--param",
        "dp3.depth=3,4",
        "--repeats",
        "3",
    ]
    assert sweep.translate(["dp3", "--json", "out.json"]) == [
        "sweep",
        "--strategy",
        "dp3",
        "-o",
        "out.json",
    ]


def test_report_lists_every_papers_artefacts(capsys):
    assert main(["report"]) == 0
    out = capsys.readouterr().out
    for paper in ("feinbube", "plauth", "carneiro", "wang", "kerbl"):
        assert re.search(rf"^{paper}: ", out, re.M)
    assert re.search(r"table3 .*\n\s+available: nqprof report plauth table3", out)
    assert re.search(r"fig5 .*\n\s+available: nqprof report wang fig5", out)
    assert main(["report", "wang"]) == 0
    assert "plauth" not in capsys.readouterr().out


def test_report_lists_an_artefact_without_a_command_as_planned(capsys, monkeypatch):
    from nqprof.cli import report

    monkeypatch.delitem(report.REPORTS, ("wang", "fig4"))
    assert main(["report", "wang"]) == 0
    assert re.search(r"fig4 .*\n\s+planned: ", capsys.readouterr().out)


def test_report_artefact_needs_a_gpu(capsys, monkeypatch):
    from nqprof.cuda import device

    monkeypatch.setattr(device, "gpu_available", lambda: (False, "no CUDA device found"))
    assert main(["report", "feinbube", "steps", "--n", "16"]) == 2
    assert "no GPU on this machine (no CUDA device found)" in capsys.readouterr().err


def test_progress_only_on_a_terminal():
    import io

    from nqprof.progress import Progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    for stream, shown in ((Tty(), True), (io.StringIO(), False)):
        with Progress(total=2, stream=stream) as progress:
            progress.case("serial N=8")
            progress.update("round 1/3 0.001 s")
            progress.case("serial N=9")
        text = stream.getvalue()
        assert bool(text) == shown
        if shown:
            assert (
                "[1/2 0:00] serial N=8: round 1/3 0.001 s\n" in text
                and "[2/2 0:00] serial N=9: starting" in text
            )
    quiet = Tty()
    with Progress(stream=quiet, enabled=False) as progress:
        progress.case("x")
    assert quiet.getvalue() == ""


def test_solve_rounds_auto_and_the_repeats_alias(capsys):
    assert main(["solve", "8", "--rounds", "auto", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["rounds"] >= 5 and record["verified"]
    assert main(["solve", "8", "-r", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rounds"] == 3
    assert main(["solve", "8", "--rounds", "0"]) == 2
    err = capsys.readouterr().err
    assert (
        "--rounds: the number of rounds (or auto) must be an integer in 1..100000, got '0'" in err
    )


@pytest.mark.parametrize("argv", [["--help"], ["strategies"], ["solve", "8", "-s", "serial"]])
def test_instant_commands_import_nothing_heavy(argv):
    heavy = command_imports(argv) & HEAVY
    assert not heavy, f"{argv} imports {sorted(heavy)}"


# -- the strategy registry ------------------------------------------------------------------


def test_registry_order_does_not_depend_on_entry_point_order(monkeypatch):
    from nqprof import strategies

    table = strategies._table()
    expected = strategies.names()
    monkeypatch.setattr(strategies, "_table", lambda: dict(reversed(list(table.items()))))
    assert strategies.names() == expected
    assert expected[:3] == ["serial", "multicore", "serial-d4"]


def test_the_strategy_table_is_in_listing_order():
    """pyproject.toml says its strategy entry points are in the order `nqprof strategies`
    lists them: they are."""
    import tomllib

    from nqprof import strategies

    text = (ROOT / "pyproject.toml").read_text()
    assert "# The strategies, in the order `nqprof strategies` lists them" in text
    table = list(tomllib.loads(text)["project"]["entry-points"][strategies.GROUP])
    listed = [name for name in strategies.names() if name in table]
    assert table == listed


def test_another_package_registers_a_strategy(monkeypatch, tmp_path):
    from nqprof import strategies

    dist = tmp_path / "other_package-1.0.dist-info"
    dist.mkdir()
    (dist / "entry_points.txt").write_text(
        f"[console_scripts]\nx = y:z\n\n[{strategies.GROUP}]\nmisbehaving "
        "= fake_strategies:STRATEGY\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert (
        "misbehaving",
        "fake_strategies:STRATEGY",
        "other-package",
    ) in strategies._installed_entry_points(strategies.GROUP)
    strategies._table.cache_clear()
    try:
        assert strategies.names()[-1] == "misbehaving"
        assert strategies.get("misbehaving").title == "test double"
        (dist / "entry_points.txt").write_text(
            f"[{strategies.GROUP}]\nother = fake_strategies:STRATEGY\n"
        )
        strategies._table.cache_clear()
        with pytest.raises(
            InputError,
            match="entry point 'other' of nqprof.strategies names strategy 'misbehaving'",
        ):
            strategies.get("other")
    finally:
        strategies._cache.pop("misbehaving", None)
        strategies._table.cache_clear()


def test_every_command_names_its_group():
    """main() builds only the named command's group, and `nqprof --help` lists the table
    without building any: the table must know every command, its group and its help, in the
    order the groups register them."""
    import argparse

    from nqprof import cli

    def commands(parser):
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return [(choice.dest, choice.help) for choice in sub._choices_actions]

    assert commands(cli.build_parser()) == [
        (command, help_text) for command, (_, help_text) in cli.COMMANDS.items()
    ]
    for command, (group, _) in cli.COMMANDS.items():
        names = {name for name, _ in commands(cli.build_parser(command))}
        assert command in names and names == {c for c, (g, _) in cli.COMMANDS.items() if g == group}


def test_help_lists_the_commands_without_building_them(capsys):
    """`nqprof --help` prints what the parser of every group would print."""
    from nqprof import cli

    assert cli.listing_parser().format_help() == cli.build_parser().format_help()
    with pytest.raises(SystemExit):
        main(["--help"])
    assert capsys.readouterr().out == cli.build_parser().format_help()


def _imported_after(argv) -> set[str]:
    """The modules a fresh interpreter holds after ``main(argv)``."""
    code = (
        "import contextlib, io, sys\nfrom nqprof.cli import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()):\n    try:\n        main({argv!r})\n"
        "    except SystemExit:\n        pass\nprint(' '.join(sorted(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return set(result.stdout.split())


def test_help_imports_no_numpy_and_no_command_group():
    imported = _imported_after(["--help"])
    assert "numpy" not in imported
    assert not {m for m in imported if m.startswith("nqprof.cli.")}, sorted(imported)


def _module_level_imports(path: Path) -> set[str]:
    """Top-level packages a module imports when it is imported (not in functions, classes or
    ``if TYPE_CHECKING:``)."""
    found: set[str] = set()
    todo = list(ast.parse(path.read_text()).body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If):
            todo += (
                node.orelse
                if "TYPE_CHECKING" in ast.unparse(node.test)
                else node.body + node.orelse
            )
        elif isinstance(node, ast.Try):
            todo += (
                node.body
                + node.orelse
                + node.finalbody
                + [s for h in node.handlers for s in h.body]
            )
        elif isinstance(node, ast.With):
            todo += node.body
        elif isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.add((node.module or "").split(".")[0])
    return found


def test_modules_that_strategies_imports_keep_numpy_in_functions():
    """Every module `nqprof strategies` imports leaves numpy (and anything heavier) to the
    functions and sessions that use it."""
    modules = sorted(m for m in _imported_after(["strategies"]) if m.split(".")[0] == "nqprof")
    assert "nqprof.strategies.cdp.session" in modules and "nqprof.subproblems" in modules
    for module in modules:
        path = ROOT / "src" / Path(*module.split("."))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        heavy = _module_level_imports(path) & {"numpy", *HEAVY}
        assert not heavy, f"{module} imports {sorted(heavy)} at module level"


@pytest.mark.slow
def test_cli_start_tool_times_the_instant_commands_beside_numpy():
    tool = [sys.executable, str(ROOT / "tools" / "cli_start.py")]
    out = subprocess.run([*tool, "--repeats", "1"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert [line.split("  ")[0].strip() for line in lines] == [
        'python -c "import numpy"',
        "nqprof --help",
        "nqprof strategies",
    ]
    assert all(re.search(r"\d ms +\d+\.\d\dx", line) for line in lines) and " 1.00x" in lines[0]
    bad = subprocess.run([*tool, "--repeats", "0"], capture_output=True, text=True, timeout=60)
    assert (
        bad.returncode == 2
        and bad.stderr.strip() == "cli_start.py: error: --repeats must be at least 1, got 0"
    )


def test_strategies_imports_no_numpy():
    """Listing the strategies imports every strategy module for its parameters: none may
    import numpy at import time (only inside the functions and sessions that use it)."""
    assert "numpy" not in _imported_after(["strategies"])


@pytest.fixture
def profiled(monkeypatch):
    """nsys replaced: the argv that `nqprof profile` would run under it."""
    from nqprof.analysis import trace as nsys_trace

    seen = {}
    monkeypatch.setattr(
        nsys_trace,
        "profile",
        lambda argv, output, **kw: seen.setdefault("argv", argv) and "t.sqlite",
    )
    monkeypatch.setattr(nsys_trace, "load", lambda path: None)
    monkeypatch.setattr(nsys_trace, "breakdown", lambda loaded: "")
    return seen


@pytest.mark.parametrize(
    "command", [["solve", "12"], ["characterize", "timeline", "13"], ["queue-bench", "-q"]]
)
def test_profile_runs_any_nqprof_command_through_python(profiled, tmp_path, command):
    """`nqprof profile -- CMD` with CMD an nqprof command of any group (only the profile
    command's group is built when it runs) profiles `python -m nqprof.cli CMD`."""
    assert main(["profile", "--output", str(tmp_path / "p"), "--", *command]) == 0
    assert profiled["argv"] == [sys.executable, "-m", "nqprof.cli", *command]


def test_profile_runs_other_programs_as_given(profiled, tmp_path):
    assert main(["profile", "--output", str(tmp_path / "p"), "--", "./my_app", "16"]) == 0
    assert profiled["argv"] == ["./my_app", "16"]


def test_report_figure_draws_fast_beside_the_papers_strategies():
    from nqprof.cli import build_parser

    args = build_parser("report").parse_args(["report", "figure", "-o", "f.png"])
    assert args.strategies.split(",")[:3] == ["serial", "feinbube", "fast"]


def test_report_plauth_table2_takes_extra_dp1_parameters():
    from nqprof.cli import build_parser

    args = build_parser("report").parse_args(["report", "plauth", "table2", "-p", "block=64"])
    assert args.param == ["block=64"]


def test_report_and_characterize_write_their_tables_alike(tmp_path, capsys, monkeypatch):
    """One emitter: the title, table and notes on the terminal (none with --json), and as
    Markdown in every .md output with the command line and the note above the table."""
    import argparse

    from nqprof.cli.output import emit

    monkeypatch.setattr(sys, "argv", ["nqprof", "report", "plauth", "table2"])
    md, other = tmp_path / "t.md", tmp_path / "t.json"
    args = argparse.Namespace(output=[str(md), str(other)], json=False)
    emit(args, "Title", ["N", "ms"], [[8, 1.5]], ["[1] a note"], "Paper: K20x.")
    out = capsys.readouterr().out
    assert out.startswith("Title\n") and "1.5" in out and out.endswith("[1] a note\n")
    text = md.read_text().splitlines()
    assert text[:6] == [
        "# Title",
        "",
        "Command: `nqprof report plauth table2`",
        "",
        "Paper: K20x.",
        "",
    ]
    assert "| N" in text[6] and text[-1] == "[1] a note  " and not other.exists()
    emit(argparse.Namespace(output=None, json=True), "Title", ["N"], [[8]], [])
    assert capsys.readouterr().out == ""


def test_one_gpu_check_for_every_command(monkeypatch, capsys):
    """report, characterize and queue-bench ask nqprof.cuda.device.require_gpu, which asks
    gpu_available: one check, one message shape (a command prints it as one line)."""
    from nqprof.cli import characterize_common, report
    from nqprof.cuda import device
    from nqprof.errors import UnavailableError

    monkeypatch.setattr(device, "gpu_available", lambda: (False, "no driver"))
    for call, hint in (
        (characterize_common.require_gpu, "`nqprof characterize` measures on a CUDA GPU"),
        (lambda: report.require_gpu(["fast"]), "`nqprof report` measures on a CUDA GPU"),
    ):
        with pytest.raises(UnavailableError) as err:
            call()
        assert str(err.value).startswith(f"no GPU on this machine (no driver); {hint}")
    assert report.require_gpu(["serial"]) == "CPU"
    assert main(["queue-bench", "--sizes", "4"]) != 0
    assert "no GPU on this machine (no driver); render a saved run" in capsys.readouterr().err
    monkeypatch.setattr(device, "gpu_available", lambda: (True, "GPU 0"))
    assert characterize_common.require_gpu() == "GPU 0" == device.require_gpu("unused")


@pytest.mark.parametrize("name", ["launch", "reserve", "ideal"])
def test_characterize_rounds_help_says_what_auto_is_there(name, capsys):
    """`nqprof characterize ... --rounds auto` is the relative-standard-error rule of solve
    where the measurement runs through the round loop (launch; its default a count), else
    the measurement's own fixed count: its help says which, with the count."""
    from nqprof.cli.characterize_common import DEFAULT_ROUNDS, ROUND_LOOP

    with pytest.raises(SystemExit):
        main(["characterize", name, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    count = DEFAULT_ROUNDS[name]
    if name in ROUND_LOOP:
        assert "relative standard error is under" in text and f"(default: {count})" in text
        return
    assert f"auto: {count} round{'s' if count != 1 else ''} for this measurement (a fixed" in text
    assert "relative standard error is under" not in text
