"""Counts read as English: one helper (nqprof.textfmt.plural) for every count phrase nqprof
prints, and the phrases themselves at a count of 1 and of 2."""

import shutil
from pathlib import Path

import pytest

from nqprof.cli import main
from nqprof.rounds import RoundRule
from nqprof.textfmt import plural

DATA = Path(__file__).parent / "data" / "benchmarks"


@pytest.mark.parametrize(
    "args,text",
    [
        ((1, "round"), "1 round"),
        ((2, "round"), "2 rounds"),
        ((0, "round"), "0 rounds"),
        ((1, "D4 class", "D4 classes"), "1 D4 class"),
        ((2, "D4 class", "D4 classes"), "2 D4 classes"),
        ((1, "retry", "retries"), "1 retry"),
        ((1632, "task", None, ","), "1,632 tasks"),
        ((1, "task", None, ","), "1 task"),
    ],
)
def test_plural_agrees_with_its_count(args, text):
    assert plural(*args) == text


def test_round_rule_says_1_round():
    assert RoundRule(fixed=1).describe() == "1 round"
    assert RoundRule(fixed=2).describe() == "2 rounds"
    assert RoundRule(min_rounds=1).describe().startswith("auto: at least 1 round and ")


@pytest.mark.parametrize(
    "argv,phrase",
    [
        (["solve", "4", "-s", "serial-d4"], "one CPU thread, 1 D4 class of frames"),
        (["solve", "5", "-s", "serial-d4"], "one CPU thread, 2 D4 classes of frames"),
        (["solve", "8", "-s", "multicore", "-p", "threads=1"], " on 1 thread "),
        (["solve", "8", "-s", "multicore", "-p", "threads=2"], " on 2 threads "),
    ],
)
def test_solve_notes_agree_with_their_counts(argv, phrase, capsys):
    assert main([*argv, "-q", "--rounds", "1"]) == 0
    assert phrase in capsys.readouterr().out


@pytest.mark.parametrize("runs", [1, 2])
def test_history_says_1_run(runs, tmp_path, capsys):
    source = DATA / "Linux-CPython-3.11-64bit"
    folder = tmp_path / source.name
    folder.mkdir()
    for path in sorted(source.glob("*.json"))[:runs]:
        shutil.copy(path, folder)
    assert main(["history", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1 run, 6 benchmarks" if runs == 1 else "2 runs, 12 benchmarks")
