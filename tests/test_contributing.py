"""CONTRIBUTING.md's steps, followed once: in a copy of the tree (src, kernels, pyproject.toml,
setup.py), a throwaway CPU strategy in pure Python, a throwaway command, a throwaway
subpackage and a field of the result are added as CONTRIBUTING says, then run.

The copy runs from its source folder (PYTHONPATH), as a checkout does: the strategy registry
reads the copy's pyproject.toml, `nqprof --help` reads the copy's COMMANDS. The C extension
is not built again: the copy gets the one this nqprof runs with. What an install would read
(the entry points, the packages setup.py finds) is checked in the metadata setuptools writes
for the copy (`setup.py egg_info`, which builds nothing).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nqprof import _cpu

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow  # seconds: a copy of the tree and a few nqprof processes

STRATEGY_MODULE = '''\
"""throwaway: a pure-Python bitmask count (added by tests/test_contributing.py)."""

from __future__ import annotations

from .base import Param, Strategy
from .cpu_common import TimedCall


def _count(n: int, cols: int = 0, ld: int = 0, rd: int = 0) -> int:
    full = (1 << n) - 1
    if cols == full:
        return 1
    total, free = 0, ~(cols | ld | rd) & full
    while free:
        bit = free & -free
        free ^= bit
        total += _count(n, cols | bit, ((ld | bit) << 1) & full, (rd | bit) >> 1)
    return total


class Throwaway(Strategy):
    name = "throwaway"
    order = 15
    title = "pure-Python bitmask DFS (a throwaway)"
    bench_max_n = 8
    params = (Param("rounds", "calls per round", default=1, lo=1, hi=3),)

    def open(self, n, params):
        return TimedCall(
            lambda: sum(_count(n) for _ in range(params["rounds"])) // params["rounds"],
            {"notes": ["pure Python"]},
        )


STRATEGY = Throwaway()
'''

COMMAND_MODULE = '''\
"""``nqprof throwaway N``: the throwaway strategy's title and N (tests/test_contributing.py)."""

from __future__ import annotations

from ..numeric import add_number
from ..problem import validate_n


def cmd_throwaway(args) -> int:
    from ..strategies import get

    print(f"throwaway N={args.n}: {get('throwaway').title}")
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("throwaway", help="print the throwaway strategy's title")
    add_number(p.add_argument, "n", number=validate_n, help="N")
    p.set_defaults(func=cmd_throwaway)
'''


def _edit(path: Path, pattern: str, replacement: str) -> None:
    text = path.read_text()
    new, count = re.subn(pattern, replacement, text, count=1, flags=re.M)
    assert count == 1, f"{path.name}: {pattern!r} not found (CONTRIBUTING's step changed?)"
    path.write_text(new)


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """The copy, with CONTRIBUTING's steps done."""
    root = tmp_path_factory.mktemp("nqprof-copy")
    skip = shutil.ignore_patterns("__pycache__", "*.so", "*.egg-info", "*.pyc")
    for name in ("src", "kernels", "tests"):
        shutil.copytree(ROOT / name, root / name, ignore=skip)
    for name in ("pyproject.toml", "setup.py", "README.md", "CONTRIBUTING.md"):
        shutil.copy2(ROOT / name, root / name)
    shutil.copy2(_cpu.__file__, root / "src" / "nqprof" / Path(_cpu.__file__).name)
    pkg = root / "src" / "nqprof"

    # Add a strategy: 2. the module (pure Python: no kernel, no C), 3. its entry point.
    (pkg / "strategies" / "throwaway.py").write_text(STRATEGY_MODULE)
    _edit(
        root / "pyproject.toml",
        r'^(serial = "nqprof\.strategies\.serial:STRATEGY"\n)',  # order 15: after serial
        r'\1throwaway = "nqprof.strategies.throwaway:STRATEGY"\n',
    )
    # Add a command: a module of cli/ with add_commands, its command in COMMANDS.
    (pkg / "cli" / "throwaway.py").write_text(COMMAND_MODULE)
    _edit(
        pkg / "cli" / "__init__.py",
        r"^(COMMANDS: dict\[str, tuple\[str, str\]\] = \{\n)",
        r'\1    "throwaway": ("throwaway", "print the throwaway strategy\'s title"),\n',
    )
    # Add a subpackage: its folder with an __init__.py, named in the map, given a layer.
    (pkg / "throwaway_pkg").mkdir()
    (pkg / "throwaway_pkg" / "__init__.py").write_text('"""A throwaway subpackage."""\n')
    _edit(
        root / "CONTRIBUTING.md",
        r"^(  problem\.py )",
        r"  throwaway_pkg/         a throwaway subpackage (tests/test_contributing.py)\n\1",
    )
    _edit(root / "CONTRIBUTING.md", r"(one module per command group \()", r"\1throwaway, ")
    _edit(
        root / "tests" / "test_layers.py",
        r'^(\s+)("nqprof\.errors",\n)',
        r'\1\2\1"nqprof.throwaway_pkg",\n',
    )
    # Add a field to the result: the field in RunRecord, filled in from_measurements.
    _edit(
        pkg / "result.py",
        r"^(    #: The record's schema version \(SCHEMA_VERSION\)\.\n)",
        r"    #: How many rounds the record saw (tests/test_contributing.py).\n"
        r"    rounds_seen: int = 0\n\1",
    )
    _edit(pkg / "result.py", r"^(        return cls\(\n)", r"\1            rounds_seen=len(ms),\n")
    return root


def _run(tree: Path, *argv: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, *argv],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_the_copy_runs_from_its_own_source(tree):
    out = _run(tree, "-c", "import nqprof, nqprof.throwaway_pkg; print(nqprof.__file__)")
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()) == tree / "src" / "nqprof" / "__init__.py"


def test_the_new_strategy_is_listed_and_counts(tree):
    listed = _run(tree, "-m", "nqprof.cli", "strategies")
    assert listed.returncode == 0, listed.stderr
    assert re.search(r"^throwaway\s+.*pure-Python bitmask DFS", listed.stdout, re.M)
    names = [line.split()[0] for line in listed.stdout.splitlines() if line[:1].isalpha()]
    assert names.index("serial") < names.index("throwaway") < names.index("multicore")
    solved = _run(tree, "-m", "nqprof.cli", "solve", "8", "-s", "throwaway", "-p", "rounds=2")
    assert solved.returncode == 0, solved.stderr
    assert re.search(r"count\s+92\s+verified", solved.stdout)


def test_the_new_command_is_listed_and_runs(tree):
    helped = _run(tree, "-m", "nqprof.cli", "--help")
    assert re.search(r"^\s+throwaway\s+print the throwaway strategy's title", helped.stdout, re.M)
    ran = _run(tree, "-m", "nqprof.cli", "throwaway", "9")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "throwaway N=9: pure-Python bitmask DFS (a throwaway)\n"
    bad = _run(tree, "-m", "nqprof.cli", "throwaway", "nine")
    assert bad.returncode == 2 and bad.stderr.startswith("nqprof: error: ")


def test_the_checks_contributing_names_pass_in_the_copy(tree):
    """The map (that it names every module: the copy has no bench/ or tools/ for its other
    checks), the layers and the command table, as CONTRIBUTING says they check a change."""
    out = _run(
        tree,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-m",
        "slow or not slow",  # the layers' slow checks too
        "tests/test_map.py::test_every_module_is_named_in_the_map",
        "tests/test_layers.py",
        "tests/test_cli.py::test_every_command_names_its_group",
        "tests/test_cli.py::test_help_lists_the_commands_without_building_them",
        "tests/test_cli.py::test_the_strategy_table_is_in_listing_order",
        "tests/test_listing.py",
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert re.search(r"\d+ passed", out.stdout) and "failed" not in out.stdout


def test_an_install_would_carry_the_strategy_and_the_subpackage(tree):
    """setup.py's package discovery and pyproject.toml's entry points, as setuptools writes
    them into the metadata of an install (egg_info builds nothing)."""
    meta = tree / "meta"
    meta.mkdir(exist_ok=True)
    out = _run(tree, "setup.py", "-q", "egg_info", "--egg-base", str(meta))
    assert out.returncode == 0, out.stderr
    (info,) = meta.glob("*.egg-info")
    sources = (info / "SOURCES.txt").read_text().splitlines()
    assert "src/nqprof/throwaway_pkg/__init__.py" in sources
    assert "src/nqprof/strategies/cdp/__init__.py" in sources and "kernels/dp2.cu" in sources
    entry_points = (info / "entry_points.txt").read_text()
    assert "throwaway = nqprof.strategies.throwaway:STRATEGY" in entry_points


def test_the_new_field_reaches_the_record_the_benchmark_and_the_history(tree):
    """result.py alone changed: the field is in `solve --json`, in pytest-benchmark's
    extra_info of a case, and a column of the history."""
    import json

    solved = _run(tree, "-m", "nqprof.cli", "solve", "6", "-s", "serial", "-r", "3", "--json")
    assert solved.returncode == 0, solved.stderr
    assert json.loads(solved.stdout)["rounds_seen"] == 3
    shutil.copytree(ROOT / "bench", tree / "bench", dirs_exist_ok=True)
    storage = tree / "storage"
    ran = _run(
        tree, "-m", "pytest", "bench/", "-q", "-p", "no:cacheprovider", "--nq-strategy=serial",
        "--nq-n=6", "--benchmark-autosave", f"--benchmark-storage={storage}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    (saved,) = storage.glob("*/*.json")
    (bench,) = json.loads(saved.read_text())["benchmarks"]
    assert bench["extra_info"]["rounds_seen"] == bench["extra_info"]["rounds"] >= 5
    table = tree / "history.csv"
    listed = _run(tree, "-m", "nqprof.cli", "history", str(storage), "--csv", str(table))
    assert listed.returncode == 0, listed.stderr
    header = table.read_text().splitlines()[0].split(",")
    assert "extra.rounds_seen" in header
