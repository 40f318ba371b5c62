"""No comment quotes a measured time: the numbers live in docs/results/ with the commands that
produced them, and a comment says which result chose a default (``chosen by the sweep in
docs/results/dp2-tune-h200.log``). A time in a comment goes stale the day the code around
it changes, and nothing checks it.

The rule: a comment paragraph (consecutive ``#`` lines, a paragraph of a docstring, a C/CUDA
comment) of src/ or kernels/ that holds a duration (a number and a time unit) and speaks of a
measurement (an H100 or H200, measured, took, ran in, faster, slower, a median) fails.
Examples of output formats inside ``double backticks`` and a paper's published numbers (which
say neither) pass.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PY = (".py",)
C = (".c", ".h", ".cu", ".cuh")

DURATION = re.compile(
    r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s*(?:ms|us|µs|ns|s|sec|seconds?|minutes?|min|hours?)(?!\w)"
)
MEASUREMENT = re.compile(
    r"\b(?:H[12]00s?|measured|measures?|took|takes|ran|runs? in|faster|slower|medians?|timed)\b",
    re.I,
)
CODE_SPAN = re.compile(r"``.*?``", re.S)


def _paragraphs(lines: list[tuple[int, str]]):
    """Split (line, text) pairs at blank lines."""
    cur: list[tuple[int, str]] = []
    for ln, text in lines:
        if text.strip(" \t#*/"):
            cur.append((ln, text))
        elif cur:
            yield cur
            cur = []
    if cur:
        yield cur


def python_comments(source: str):
    """The comment and docstring paragraphs of Python source, as lists of (line, text)."""
    block: list[tuple[int, str]] = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.COMMENT:
            continue
        if block and tok.start[0] != block[-1][0] + 1:
            yield from _paragraphs(block)
            block = []
        block.append((tok.start[0], tok.string))
    yield from _paragraphs(block)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                first = node.body[0].lineno
                yield from _paragraphs([(first + i, t) for i, t in enumerate(doc.split("\n"))])


def c_comments(source: str):
    """The comment paragraphs of C/CUDA source (``/* */`` blocks, runs of ``//`` lines)."""
    for m in re.finditer(r"/\*.*?\*/|(?://[^\n]*\n?)+", source, re.S):
        first = source.count("\n", 0, m.start()) + 1
        yield from _paragraphs([(first + i, t) for i, t in enumerate(m.group(0).split("\n"))])


def measured_times(path: Path, source: str | None = None) -> list[str]:
    """``path:line: text`` for each comment paragraph of ``path`` that quotes a measured time."""
    source = path.read_text() if source is None else source
    paragraphs = python_comments(source) if path.suffix in PY else c_comments(source)
    found = []
    for para in paragraphs:
        text = CODE_SPAN.sub("", "\n".join(t for _, t in para))
        if DURATION.search(text) and MEASUREMENT.search(text):
            found.append(f"{path}:{para[0][0]}: {' '.join(t.strip() for _, t in para)}")
    return found


@pytest.mark.slow
def test_no_comment_quotes_a_measured_time():
    files = [
        p
        for top in ("src", "kernels")
        for p in sorted((ROOT / top).rglob("*"))
        if p.suffix in PY + C and "__pycache__" not in p.parts
    ]
    assert len(files) > 100
    found = [hit for p in files for hit in measured_times(p.relative_to(ROOT))]
    assert not found, "measured times in comments (move them to docs/results/):\n" + "\n".join(
        found
    )


@pytest.mark.parametrize(
    "name,source",
    [
        ("a.py", "x = 4  # depth 4 ran in 4.45 s on an H200\n"),
        ("a.py", "# At N=18 the estimate does not fit; depth 4 ran\n# in 4.45 s.\nx = 1\n"),
        ("a.py", '"""Module.\n\nMeasured on an H200: 0.0036/0.0050/0.035 s at N=13."""\n'),
        ("a.py", 'def f():\n    """bwd: 0.83 s against 1.06 s with bq, the median of 3."""\n'),
        ("a.cu", "// on an H200 23 us faster at N=20\n__global__ void k() {}\n"),
        ("a.h", "/* unpadded, serial-d4 at N=10 took 155\n * to 265 us by where it landed */\n"),
    ],
)
def test_a_measured_time_in_a_comment_is_found(name, source):
    assert measured_times(Path(name), source)


@pytest.mark.parametrize(
    "name,source",
    [
        ("a.py", "# the default suite finishes in minutes\n"),
        ("a.py", '"""Durations print as ``12.345 ms`` (measured time)."""\n'),
        ("a.py", "TIMEOUT = 600  # seconds: a run that takes longer is killed\n"),
        ("a.py", "# the paper: N=16 in 2.9 s on a GTX 275\n"),
        ("a.py", "# measured on an H200\n\n# 5 s between probes\n"),
        ("a.cu", "// one launch per thread, ~1 us each\n"),
    ],
)
def test_what_is_not_a_measured_time_passes(name, source):
    assert not measured_times(Path(name), source)
