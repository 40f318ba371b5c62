"""The `nqprof` command as a user meets it: output, errors and exit codes."""

import json
import subprocess
import sys

import pytest

from nqprof.cli import main, parse_params
from nqprof.errors import InputError
from nqprof.strategies import all_strategies, get


def nqprof(*args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "nqprof.cli", *args], capture_output=True, text=True, timeout=timeout
    )


def test_solve_serial_14_prints_verified_count():
    out = nqprof("solve", "14", "--strategy", "serial")
    assert out.returncode == 0, out.stderr
    assert "count      365596  verified" in out.stdout


def test_solve_json_record():
    out = nqprof("solve", "10", "--strategy", "multicore", "--param", "depth=3", "--repeats", "3", "--json")
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    assert record["count"] == 724 and record["verified"] is True
    assert record["params"]["depth"] == 3 and record["rounds"] == 3 and len(record["wall_times"]) == 3


@pytest.mark.parametrize(
    "args,message",
    [
        (["solve", "0"], "N must be in 1..27, got 0"),
        (["solve", "40"], "N must be in 1..27, got 40"),
        (["solve", "abc"], "N must be an integer in 1..27"),
        (["solve", "12", "-s", "multicore", "-p", "depth=12"], "parameter depth must be in 1..11 for N=12, got 12"),
        (["solve", "12", "-s", "feinbube", "-p", "block=0"], "parameter block must be in 1..1024 for N=12, got 0"),
        (["solve", "12", "-s", "feinbube", "-p", "block=2000"], "parameter block must be in 1..1024 for N=12, got 2000"),
        (["solve", "12", "-s", "nosuch"], "unknown strategy 'nosuch' (known: serial, multicore"),
        (["solve", "12", "-s", "feinbube", "-p", "colour=red"], "strategy feinbube has no parameter 'colour'"),
        (["solve", "12", "-s", "feinbube", "-p", "depth"], "--param takes key=value"),
        (["solve", "12", "-s", "feinbube", "-p", "opt=fast"], "parameter opt must be one of local, shared-stack"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message):
    out = nqprof(*args)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], out.stderr


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
