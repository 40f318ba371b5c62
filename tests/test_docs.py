"""Every `$ nqprof ...` example of README.md and docs/*.md that needs no GPU is run, and its
output checked against the lines the documentation shows.

Which examples run (the rule): a block of examples is skipped when the text just before it
speaks of an H200 (its output was measured there), or when one of its commands needs a GPU
(a GPU strategy that is not refused before it starts, a measuring `report`, `characterize`
or `queue-bench` without `--from`, `profile`), compiles every kernel (`build`, minutes), or
talks to a remote cluster (`--cluster ADDRESS`), or reads the history of an earlier
`pytest bench/ --benchmark-autosave` (`history`, `compare`, `plot` without `--storage`, or
for `history` a folder). `<!-- docs-test: skip -->` before a block skips it by hand (none
does today).

How output is compared: stdout line by line in order; lines shown starting with `nqprof:`
(and the `Try 'nqprof ... --help'.` line after a usage error) are stderr messages, looked
for in stderr. A line `...` stands for any number of lines, and
`...` inside a line for any text. Durations (`75.088 ms`, `4.366 s`), speedups, scheduler
addresses, host names after them, runs of spaces and the widths of a table's rule of dashes
are normalised, since they differ from run to run. A line like `[0:04] 8/8 tasks` is
progress shown only on a terminal and not checked.

Every `pytest bench/ ...` command line in a code block of the same documents runs too, when it
needs no GPU: not measured on an H200, not under another program (`nsys profile ...`), no
GPU strategy selected, no `--nq-trace` (Nsight Systems) and no `--nq-cluster` other than
`local`; on a machine with a GPU only lines that select CPU strategies alone run (the others
would run the GPU cases). It runs in a copy of bench/ in a temporary folder (nothing is
written into the tree), at N=8 where the line leaves N at its default (8..16 takes minutes),
and must pass; a line shown as `$ pytest bench/ ...` with output is compared with it as
above, and also the counts of pytest's summary (`[9]`, `27 passed`), its `===` bars and
the reason after `needs a GPU:` (it depends on the machine) are normalised. Every
`--nq-*` option the documents name is one the plugin has, written as it takes a value.

The `pytest bench/` lines, and the examples that count boards (a local Dask cluster's too) or
wait out a timeout, are marked slow (`pytest -m slow` runs them; CI runs every test).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cli_process import nqprof

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@dataclass
class Example:
    doc: str
    line: int
    command: str
    expected: list[str] = field(default_factory=list)
    #: the exit code a following `$ echo $?` shows, else 0 (2 where an error line is shown)
    code: int | None = None
    closed: bool = False


@dataclass
class Block:
    doc: str
    context: str
    examples: list[Example]
    skip_mark: bool = False


def _blocks(path: Path) -> list[Block]:
    """The code blocks (indented or fenced) of ``path`` that hold `$ nqprof` examples."""
    lines = path.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        line = lines[i]
        fenced = line.strip().startswith("```")
        indented = line.startswith("    ") and line.strip().startswith("$ nqprof")
        if not (fenced or indented):
            i += 1
            continue
        start = i
        body: list[tuple[int, str]] = []
        if fenced:
            indent = len(line) - len(line.lstrip())
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                body.append((i + 1, lines[i][indent:]))
                i += 1
            i += 1
        else:
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                if not lines[i].strip() and (
                    i + 1 >= len(lines) or not lines[i + 1].startswith("    ")
                ):
                    break
                body.append((i + 1, lines[i][4:]))
                i += 1
        examples: list[Example] = []
        echo = False
        for number, text in body:
            if text.startswith("$ nqprof"):
                examples.append(Example(path.name, number, text[2:]))
            elif text.startswith("$ ") and examples:
                examples[-1].closed, echo = True, text.strip() == "$ echo $?"
            elif echo and examples:
                examples[-1].code, echo = int(text.strip()), False
            elif examples and not examples[-1].closed:
                examples[-1].expected.append(text.rstrip())
        for ex in examples:
            while ex.expected and not ex.expected[-1].strip():
                ex.expected.pop()
        if not examples:
            continue
        before = [ln for ln in lines[max(0, start - 6) : start]]
        context = " ".join(
            before[
                -([j for j, ln in enumerate(reversed(before)) if not ln.strip()] + [len(before)])[
                    1
                ] :
            ]
            if len([ln for ln in before if not ln.strip()]) > 1
            else before
        )
        blocks.append(
            Block(
                path.name,
                "\n".join(lines[max(0, start - 4) : start]) + " " + context,
                examples,
                "docs-test: skip" in "\n".join(lines[max(0, start - 3) : start]),
            )
        )
    return blocks


def _strip_comment(command: str) -> str:
    return re.split(r"\s{2,}#", command)[0].strip()


def _gpu_strategies() -> set[str]:
    from nqprof.strategies import all_strategies

    return {s.name for s in all_strategies() if s.needs_gpu}


def _why_skipped(block: Block) -> str | None:
    if block.skip_mark:
        return "marked docs-test: skip"
    if "H200" in block.context:
        return "measured on an H200 host"
    gpu = _gpu_strategies()
    for ex in block.examples:
        words = _strip_comment(ex.command).split()[1:]
        command = words[0] if words else ""
        is_error = len(ex.expected) == 1 and ex.expected[0].startswith("nqprof: error:")
        for flag in ("-s", "--strategy"):
            if flag in words and words.index(flag) + 1 < len(words):
                if (
                    set(words[words.index(flag) + 1].split(",")) & gpu
                    and not is_error
                    and command != "plan"
                ):
                    return f"{ex.command}: needs a GPU"
        if command in ("build", "profile"):
            return f"{ex.command}: compiles or profiles"
        if command in ("characterize", "queue-bench") and "--from" not in words:
            return f"{ex.command}: measures on a GPU"
        if command == "report" and len(words) > 1 and "--model-only" not in words:
            return f"{ex.command}: measures on a GPU"
        if "--cluster" in words and words[words.index("--cluster") + 1] != "local":
            return f"{ex.command}: needs a running Dask scheduler"
        named = "--storage" in words or (
            command == "history" and len(words) > 1 and not words[1].startswith("-")
        )
        if command in ("history", "compare", "plot") and not named and len(words) < 4:
            return (
                f"{ex.command}: reads the history of an "
                "earlier `pytest bench/ --benchmark-autosave`"
            )
    return None


def _slow(ex: Example) -> bool:
    """An example that counts boards (a `solve` or `sweep` that is no error, on a local Dask
    cluster too) or waits out a timeout: seconds on a small machine."""
    words = _strip_comment(ex.command).split()[1:]
    is_error = len(ex.expected) == 1 and ex.expected[0].startswith("nqprof: error:")
    counts = bool(words) and words[0] in ("solve", "sweep") and not is_error
    return counts or (is_error and "no answer to" in ex.expected[0])


LOOP_MARK = "docs-test: loop"


def _marked_loop(path: Path, start: int) -> bool:
    """Whether the code block starting at line index ``start`` is a marked loop (its commands
    run in order in one folder by :func:`test_the_readme_loop_runs_as_shown`)."""
    return any(LOOP_MARK in ln for ln in path.read_text().splitlines()[max(0, start - 2) : start])


def _examples():
    for path in DOCS:
        for block in _blocks(path):
            if LOOP_MARK in block.context:  # run by test_the_readme_loop_runs_as_shown
                continue
            why = _why_skipped(block)
            for ex in block.examples:
                if why:
                    marks = [pytest.mark.skip(reason=why)]
                else:
                    marks = [pytest.mark.slow] if _slow(ex) else []
                yield pytest.param(ex, id=f"{ex.doc}:{ex.line}", marks=marks)


_TIME = re.compile(r"\d[\d,]*(\.\d+)?\s?(ns|us|µs|ms|s|min)\b")
_NUMX = re.compile(r"\b\d+(\.\d+)?x\b")
_ADDR = re.compile(r"(tcp|http)://[\w.\-]+:\d+(/status)?")


def normalise(line: str) -> str:
    if line.strip() and not line.strip(" -"):  # a table's rule: its widths follow the times
        return " ".join("--" for _ in line.split())
    line = _ADDR.sub("<addr>", line)
    line = re.sub(r"<addr> \([^,):]+", "<addr> (<host>", line)
    line = _TIME.sub("<t>", line)
    line = _NUMX.sub("<x>", line)
    return " ".join(line.split())


def _pattern(line: str) -> re.Pattern:
    parts = [re.escape(p) for p in normalise(line).split("...")]
    return re.compile("^" + ".*".join(parts) + "$")


def match(expected: list[str], actual: list[str]) -> str | None:
    """None if ``actual`` matches ``expected`` (with `...` lines), else what differs."""
    want = [ln for ln in expected if not re.match(r"^\[\d+:\d+\]", ln.strip())]
    got = [normalise(ln) for ln in actual]

    def at(i: int, j: int) -> bool:
        if i == len(want):
            return j == len(got) or all(not g for g in got[j:])
        if want[i].strip() == "...":
            return any(at(i + 1, k) for k in range(j, len(got) + 1))
        if j < len(got) and _pattern(want[i]).match(got[j]):
            return at(i + 1, j + 1)
        if j < len(got) and not got[j] and not want[i].strip():
            return at(i + 1, j + 1)
        return False

    if at(0, 0):
        return None
    for i, (w, g) in enumerate(zip(want, got, strict=False)):
        if w.strip() == "...":
            break
        if not _pattern(w).match(g):
            return f"line {i + 1}: expected {normalise(w)!r}, got {g!r}"
    return f"expected {len(want)} lines, got {len(got)}:\n" + "\n".join(actual)


def _on_stderr(line: str) -> bool:
    """A documented line nqprof writes to stderr: a message, or a usage error's pointer."""
    return line.startswith("nqprof:") or bool(
        re.fullmatch(r"Try 'nqprof( [\w-]+)* --help'\.", line)
    )


@pytest.mark.parametrize("example", list(_examples()))
def test_documented_example(example: Example):
    import shlex

    argv = shlex.split(_strip_comment(example.command))[1:]
    env = {**os.environ, "COLUMNS": "200"}
    out = nqprof(*argv, cwd=ROOT, env=env)
    stdout = [ln for ln in out.stdout.splitlines()]
    stderr = [normalise(ln) for ln in out.stderr.splitlines()]
    messages = [ln for ln in example.expected if _on_stderr(ln)]
    for line in messages:
        assert any(_pattern(line).match(e) for e in stderr), (
            f"{line!r} not in stderr:\n{out.stderr}"
        )
    if example.code is not None:
        assert out.returncode == example.code, out.stderr
    elif any(ln.startswith("nqprof: error:") for ln in messages):
        assert out.returncode == 2, out.stderr
    else:
        assert out.returncode == 0, out.stderr
    problem = match([ln for ln in example.expected if not _on_stderr(ln)], stdout)
    assert problem is None, f"{example.doc}:{example.line} `{example.command}`: {problem}"


def _names(marks) -> set[str]:
    return {m.name for m in marks}


def test_the_rule_finds_the_examples():
    """The README's CPU examples are run, its H200 ones are not; the ones that count boards
    or wait out a timeout are slow."""
    marks = {(p.values[0].doc, p.values[0].command): p.marks for p in _examples()}
    readme = {cmd: m for (doc, cmd), m in marks.items() if doc == "README.md"}
    run = [cmd for cmd, m in readme.items() if "skip" not in _names(m)]
    slow = {cmd for cmd, m in readme.items() if _names(m) == {"slow"}}
    assert {"nqprof solve 14 --strategy serial", "nqprof solve 27 -s serial --timeout 1"} <= slow
    assert not {"nqprof plan 16 -s dp1 -p z=3", "nqprof solve 12 --timeout inf"} & slow
    assert "nqprof solve 14 --strategy serial" in run and "nqprof plan 16 -s dp1 -p z=3" in run
    assert any(cmd.startswith("nqprof sweep") for cmd in run)
    assert (
        readme["nqprof solve 10 --strategy dp2"] and readme["nqprof solve 8 --strategy feinbube -q"]
    )
    assert (
        readme["nqprof solve 12 -s feinbube -q"] and "nqprof solve 27 -s serial --timeout 1" in run
    )


# -- `pytest bench/ ...` command lines -------------------------------------------------------


@dataclass
class BenchLine:
    doc: str
    line: int
    command: str
    context: str
    expected: list[str] = field(default_factory=list)
    #: the program the line runs pytest under (`nsys`), if any
    wrapper: str | None = None


def _code_blocks(path: Path) -> list[tuple[int, list[tuple[int, str]]]]:
    """(first line, [(line number, text)]) of every code block of ``path``: fenced, or
    indented by four spaces after a blank line."""
    lines = path.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith("```"):
            indent = len(line) - len(line.lstrip())
            start, body = i, []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                body.append((i + 1, lines[i][indent:]))
                i += 1
            blocks.append((start, body))
        elif line.startswith("    ") and i and not lines[i - 1].strip():
            start, body = i, []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                body.append((i + 1, lines[i][4:]))
                i += 1
            blocks.append((start, body))
            continue
        i += 1
    return blocks


def _bench_lines(path: Path) -> list[BenchLine]:
    lines = path.read_text().splitlines()
    found: list[BenchLine] = []
    for start, body in _code_blocks(path):
        if _marked_loop(path, start):
            continue
        context = "\n".join(lines[max(0, start - 6) : start])
        current = None
        for number, text in body:
            prompt = text.startswith("$ ")
            if "pytest bench/" in text:
                command = _strip_comment(text.removeprefix("$ ").split("&&")[-1])
                head, _, rest = command.partition("pytest bench/")
                runner = head.split()
                wrapper = None if runner in ([], ["python3", "-m"], ["python", "-m"]) else runner[0]
                current = BenchLine(
                    path.name, number, "pytest bench/" + rest, context, wrapper=wrapper
                )
                found.append(current)
                if not prompt:
                    current = None
            elif prompt:
                current = None
            elif current is not None:
                current.expected.append(text.rstrip())
        for ex in found:
            while ex.expected and not ex.expected[-1].strip():
                ex.expected.pop()
    return found


def _cpu_only(words: list[str]) -> bool | None:
    """Whether the line selects CPU strategies alone (None: it selects every strategy)."""
    for i, word in enumerate(words):
        if word.startswith("--nq-strategy"):
            names = word.partition("=")[2] if "=" in word else words[i + 1]
            return not set(names.split(",")) & _gpu_strategies()
    return None


def _why_bench_skipped(ex: BenchLine) -> str | None:
    if "H200" in ex.context:
        return "measured on an H200 host"
    if ex.wrapper:
        return f"runs under {ex.wrapper}"
    words = shlex.split(ex.command)
    if any(w.startswith("--nq-trace") for w in words):
        return "traces GPU cases under Nsight Systems"
    for i, word in enumerate(words):
        if word.startswith("--nq-cluster"):
            target = word.partition("=")[2] if "=" in word else words[i + 1]
            if target != "local":
                return "needs a running Dask scheduler"
    selects = _cpu_only(words)
    if selects is False:
        return "selects a GPU strategy"
    from nqprof.cuda.device import gpu_available

    if selects is None and gpu_available()[0]:
        return "would run the GPU cases on this machine's GPU"
    return None


def _bench_examples():
    """Every `pytest bench/` line: slow, each a pytest run of its own."""
    for path in DOCS:
        for ex in _bench_lines(path):
            why = _why_bench_skipped(ex)
            mark = pytest.mark.skip(reason=why) if why else pytest.mark.slow
            yield pytest.param(ex, id=f"{ex.doc}:{ex.line}", marks=[mark])


def _pytest_normalised(line: str) -> str:
    line = re.sub(r"^=+ (.*?) =+$", r"\1", line.strip())
    line = re.sub(r"\[\d+\]", "[n]", line)
    line = re.sub(
        r"\b\d+ (passed|skipped|failed|errors?|deselected|xfailed|xpassed|warnings?)\b",
        r"n \1",
        line,
    )
    line = re.sub(r" \(\d+:\d\d:\d\d\)", "", line)
    return re.sub(r"(needs a GPU): .*", r"\1: <reason>", line)


@pytest.mark.parametrize("example", list(_bench_examples()))
def test_documented_benchmark_run(example: BenchLine, tmp_path):
    shutil.copytree(
        ROOT / "bench", tmp_path / "bench", ignore=shutil.ignore_patterns("__pycache__")
    )
    argv = shlex.split(example.command)[1:]
    if not any(a.startswith("--nq-n") for a in argv):
        argv.append("--nq-n=8")
    out = subprocess.run(
        [sys.executable, "-m", "pytest", *argv, "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert out.returncode == 0, (
        f"{example.doc}:{example.line} `{example.command}`:\n{out.stdout[-3000:]}{out.stderr}"
    )
    if example.expected:
        got = [_pytest_normalised(ln) for ln in (out.stdout + out.stderr).splitlines()]
        problem = match([_pytest_normalised(ln) for ln in example.expected], got)
        assert problem is None, f"{example.doc}:{example.line} `{example.command}`: {problem}"


def test_the_rule_finds_the_benchmark_runs():
    """The docs' CPU benchmark runs are run, their GPU, trace and remote-cluster ones are not."""
    found = {(p.values[0].doc, p.values[0].command): p.marks for p in _bench_examples()}
    assert ("README.md", "pytest bench/ -rs") in found
    run = [cmd for (doc, cmd), marks in found.items() if _names(marks) == {"slow"}]
    assert "pytest bench/ --nq-strategy=serial,multicore --nq-n=8:10 -q" in run
    skipped = {
        cmd: marks[0].kwargs["reason"]
        for (doc, cmd), marks in found.items()
        if _names(marks) == {"skip"}
    }
    assert len(run) + len(skipped) == len(found)
    assert any("--nq-trace" in cmd for cmd in skipped) and any(
        cmd.startswith("pytest bench/ --nq-cluster tcp") for cmd in skipped
    )
    assert skipped["pytest bench/ --benchmark-only -k feinbube"] == "runs under nsys"


def _plugin_options() -> dict[str, bool]:
    """The plugin's --nq-* options as `pytest --help` lists them: name -> whether it takes a
    value."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return {
        m.group(1): bool(m.group(2)) for m in re.finditer(r"^ +(--nq-[\w-]+)(=)?", out.stdout, re.M)
    }


def test_the_nq_options_the_docs_name_exist():
    options = _plugin_options()
    assert options["--nq-trace"] is False and options["--nq-trace-dir"] is True
    wrong = []
    for path in DOCS:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for m in re.finditer(r"(--nq-[a-z-]*[a-z])(\[?=)?", line):
                name, value = m.groups()
                if name not in options or (value and (value == "[=" or not options[name])):
                    wrong.append(f"{path.name}:{number}: {m.group(0)}")
    assert not wrong, f"options the plugin does not take so: {wrong} (it takes {sorted(options)})"


def test_the_readme_test_command_and_ci_agree_on_the_slow_tests():
    """The README's `pytest` leaves the slow tests out (pyproject's addopts) and says how to
    run them; .ci/run runs that command and then the slow tests, where exit code 5 (none
    selected) is no failure; CONTRIBUTING's checks name both."""
    import tomllib

    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert ini["addopts"] == ["-m", "not slow"] and ini["testpaths"] == ["tests"]
    assert any(m.startswith("slow: ") for m in ini["markers"])
    readme = (ROOT / "README.md").read_text()
    assert '    pip install ".[test]" && pytest\n' in readme
    said = " ".join(readme.split())
    assert "A plain `pytest` leaves out the slow tests" in said and "`pytest -m slow`" in said
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert ci.index("pytest -rs") + 1 == ci.index("pytest -rs -m slow || [ $? -eq 5 ]")
    assert "set -euo pipefail" in ci
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    assert re.search(
        r"^    pytest +# CPU: all but the GPU tests and the slow ones$", contributing, re.M
    )
    assert re.search(r"^    pytest -m slow +# ", contributing, re.M)


def test_ci_takes_no_slow_test_selected_for_a_pass(tmp_path):
    """The guard .ci/run puts after `pytest -m slow`: exit code 5 passes, 1 fails."""
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    line = next(ln for ln in ci if ln.startswith("pytest ") and "-m slow" in ln)
    for code, ok in ((0, True), (5, True), (1, False), (2, False)):
        script = f"set -euo pipefail\npytest() {{ return {code}; }}\n{line}\necho passed\n"
        out = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
        assert (out.returncode == 0 and out.stdout == "passed\n") == ok, (code, out)


def _subcommand_parser(words: list[str]):
    """The argparse parser of ``nqprof WORDS...`` (``["report", "kerbl", "fig1"]``)."""
    import argparse

    from nqprof.cli import build_parser

    parser = build_parser(words[0])
    for word in words:
        (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return parser


def test_the_readme_names_every_option_that_writes_a_file():
    """Every output option that nqprof checks before the work (check_output and
    check_output_dir in src/nqprof/cli/) is named in the README's sentence on outputs, and
    each `COMMAND OPTION META` it names is an option of that command."""
    readme = " ".join((ROOT / "README.md").read_text().split())
    start = readme.index("A command writes a file only where an option names it")
    sentence = readme[start : readme.index("always prints the record on stdout", start)]
    named = set(re.findall(r"`[^`]*?(--?[a-z][\w-]*)(?:/(--[\w-]+))? [A-Z]+`", sentence))
    flags = {f for pair in named for f in pair if f}
    sources = "\n".join(p.read_text() for p in (ROOT / "src" / "nqprof" / "cli").glob("*.py"))
    checked = set(re.findall(r"check_output(?:_dir)?\(\s*[^,()]+,\s*\"(--[\w-]+)\"", sources))
    assert checked == {"--output", "--figure", "--csv", "--chrome", "--outdir", "--out-dir"} | {
        "--checkpoint"
    }
    assert checked <= flags, checked - flags
    commands = re.findall(r"`([a-z][a-z0-9 -]*?) (--?[a-z][\w-]*) [A-Z]+`", sentence)
    assert len(commands) == 8, commands
    for words, flag in commands:
        parser = _subcommand_parser(words.split())
        assert flag in {o for a in parser._actions for o in a.option_strings}, (words, flag)


def _benchmarking() -> str:
    return " ".join((ROOT / "docs" / "benchmarking.md").read_text().split())


def test_the_default_suite_is_the_one_the_docs_count():
    """benchmarking.md's `pytest bench/ -rs` on a machine without a GPU: its CPU cases pass and
    its GPU cases are skipped, as many as the default options select, per strategy too; and
    the N range it gives each strategy is the one the code gives it."""
    from nqprof import options, strategies

    grid = options.case_grid(options.parse_settings({}))
    gpu = [case for case, strategy, _ in grid if strategy.needs_gpu]
    text = _benchmarking()
    shown = re.search(r"=+ (\d+) passed, (\d+) skipped in [\d.]+s =+", text)
    assert shown and (int(shown[1]), int(shown[2])) == (len(grid) - len(gpu), len(gpu))
    assert f"; {len(grid)} cases." in text
    results = " ".join((ROOT / "docs" / "results" / "README.md").read_text().split())
    assert f"(`pytest bench/`, 122 cases then; {len(grid)} now:" in results
    for count, name in re.findall(
        r"SKIPPED \[(\d+)\] bench/test_nqueens.py:\d+: (\S+) needs", text
    ):
        assert int(count) == sum(case.strategy == name for case in gpu), name
    ranges: dict[str, list[str]] = {}
    for name in strategies.names():
        ns = options.default_n_values(strategies.get(name))
        ranges.setdefault(f"{ns[0]}..{ns[-1]}", []).append(name)
    lo, hi = options.DEFAULT_N
    whole = ranges.pop(f"{lo}..{hi}")
    phrase = ", ".join(f"{' and '.join(names)} {r}" for r, names in ranges.items())
    assert whole and f"over N = {lo}..{hi} cut to the" in text
    assert f": {phrase}, the others {lo}..{hi};" in text, phrase


def test_the_docs_list_every_verdict_fail_on_takes():
    from nqprof.cli.history import FAILING_VERDICTS

    listed = re.search(r"`--fail-on` \(a comma list of ([a-z, -]+)\) makes", _benchmarking())
    assert listed and listed[1].split(", ") == list(FAILING_VERDICTS)


#: What the README says a machine without a GPU skips, for each reason the documented
#: examples are skipped with on such a machine.
_README_SKIPS = {
    "measured on an H200": "were measured on an H200",
    "needs a GPU": "examples that need a GPU",
    "selects a GPU strategy": "examples that need a GPU",
    "measures on a GPU": "examples that need a GPU",
    "needs a running Dask scheduler": "a running Dask scheduler",
    "runs under nsys": "Nsight Systems",
    "traces GPU cases under Nsight Systems": "Nsight Systems",
    "compiles or profiles": "a build of every kernel",
}


def test_the_readme_says_what_a_machine_without_a_gpu_skips():
    readme = " ".join((ROOT / "README.md").read_text().split())
    said = readme[readme.index("Run the tests (") : readme.index("`-rs` prints each reason")]
    assert "the GPU tests are skipped" in said
    assert "without a CUDA toolkit, so are the tests that compile kernels with nvcc" in said
    reasons = {
        mark.kwargs["reason"]
        for param in [*_examples(), *_bench_examples()]
        for mark in param.marks
        if mark.name == "skip"
    }
    assert reasons
    for reason in reasons:
        phrases = [p for key, p in _README_SKIPS.items() if key in reason]
        assert phrases and all(p in said for p in phrases), reason


def test_the_readme_loop_runs_as_shown(tmp_path):
    """The README's save, change, compare loop (its block marked docs-test: loop), run as a
    new user runs it: each `$` line in order in one folder (a copy of bench/, so the history
    lands there), each exit code 0, its output matching what the README shows."""
    path = ROOT / "README.md"
    (block,) = [b for start, b in _code_blocks(path) if _marked_loop(path, start)]
    steps: list[tuple[str, list[str]]] = []
    for _, text in block:
        if text.startswith("$ "):
            steps.append((text[2:], []))
        elif steps:
            steps[-1][1].append(text.rstrip())
    assert [c.split()[0] for c, _ in steps] == ["pytest", "pytest", "nqprof"], steps
    shutil.copytree(ROOT / "bench", tmp_path / "bench", ignore=shutil.ignore_patterns("__pyc*"))
    env = {**os.environ, "COLUMNS": "200"}
    for command, expected in steps:
        argv = shlex.split(command)
        argv = [sys.executable, "-m", *(argv if argv[0] == "pytest" else ["nqprof.cli", *argv[1:]])]
        if argv[2] == "pytest":
            argv += ["-p", "no:cacheprovider"]
        done = subprocess.run(
            argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        )
        gated = "--nq-compare-fail=slower" in argv and done.returncode == 1
        if gated:  # an A/A on a busy machine can read slower: the gate then does its job
            assert re.search(r"^serial-d4 .* slower$", done.stdout, re.M), done.stdout
        else:
            assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stderr}"
        shown = [_pytest_normalised(ln) for ln in expected]
        lines = done.stdout.splitlines()
        got = [_pytest_normalised(ln) for ln in lines]
        problem = match(shown, got)
        assert problem is None, f"README.md `{command}`: {problem}"
    assert len(list((tmp_path / ".benchmarks").glob("*/*.json"))) == 2
