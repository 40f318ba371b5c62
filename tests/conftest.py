"""Shared test set-up: GPU tests are skipped, with the reason, where no GPU run can happen;
with ``--require-gpu`` (or ``NQPROF_REQUIRE_GPU=1``) they fail instead, so that a GPU check
on a host whose GPU is not usable cannot pass by skipping everything."""

import os

import pytest


def pytest_addoption(parser):
    parser.addoption(
        "--require-gpu",
        action="store_true",
        default=False,
        help="fail the GPU tests where no GPU run can happen, instead of skipping them "
        "(also NQPROF_REQUIRE_GPU=1)",
    )


def require_gpu(config) -> bool:
    return bool(config.getoption("--require-gpu")) or os.environ.get(
        "NQPROF_REQUIRE_GPU", ""
    ) not in ("", "0")


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    from nqprof.cuda.device import gpu_available

    ok, reason = gpu_available()
    if ok:
        from nqprof.runners import keep_spares

        prebuild_gpu_tests(config)

        # the GPU tests' workers start one after another, each case starting spares for the
        # next: two import and start the driver ahead, the oldest making its context once
        # the case before has timed its rounds (NQPROF_TEST_SPARES=init:K: K of them;
        # "context": one at a time, its context made at once). On an H200 host,
        # tests/test_cdp_gpu.py and test_queue_gpu.py took 47.8 s with init:2 (init:3 the
        # same) against 67.6 s with "context" (tools/gpu_check.sh tests-spares).
        policy = os.environ.get("NQPROF_TEST_SPARES", "init:2")
        if policy == "context":
            keep_spares(True, context=True)
        else:
            keep_spares(True, depth=int(policy.removeprefix("init:")))
        return
    if require_gpu(config):
        config._nqprof_no_gpu = reason  # each GPU test fails in its set-up (pytest_runtest_setup)
        return
    skip = pytest.mark.skip(reason=f"no GPU run possible here: {reason}")
    for item in gpu_items:
        item.add_marker(skip)


def prebuild_gpu_tests(config) -> None:
    """Compile the kernel variants the GPU tests ask for (tests/gpu_builds.py) in parallel
    before the first of them, and log what they ask for, to name at the end what the list
    misses."""
    import tempfile
    import time

    from gpu_builds import read_list, sources_of

    from nqprof.cuda.build import BUILD_LOG_VARIABLE, prebuild
    from nqprof.cuda.device import driver
    from nqprof.errors import NqprofError

    if not os.environ.get(BUILD_LOG_VARIABLE):
        fd, log = tempfile.mkstemp(prefix="nqprof-builds-", suffix=".jsonl")
        os.close(fd)
        os.environ[BUILD_LOG_VARIABLE] = log  # the workers started from here inherit it

    major, minor = driver().Device(0).compute_capability()
    t0 = time.perf_counter()
    try:
        built, cached = prebuild(sources_of(read_list()), f"sm_{major}{minor}")
    except NqprofError as exc:  # no toolkit, a source that fails: the tests that need it say so
        config._nqprof_prebuilt = str(exc)
        return
    config._nqprof_prebuilt = (built, cached, time.perf_counter() - t0)


def pytest_terminal_summary(terminalreporter, config):
    prebuilt = getattr(config, "_nqprof_prebuilt", None)
    if prebuilt is None:
        return
    from pathlib import Path

    from gpu_builds import LIST, missing, read_list, read_log

    from nqprof.cuda.build import BUILD_LOG_VARIABLE

    if isinstance(prebuilt, str):
        terminalreporter.write_line(f"nqprof: kernel variants not built beforehand: {prebuilt}")
        return
    built, cached, seconds = prebuilt
    log = os.environ[BUILD_LOG_VARIABLE]
    terminalreporter.write_line(
        f"nqprof: kernel variants of the GPU tests: {built} built in parallel, {cached} "
        f"cached, before the tests ({seconds:.1f} s); requests logged to {log}"
    )
    absent = missing(read_list(), read_log(Path(log)))
    if absent:
        terminalreporter.write_line(
            f"nqprof: {len(absent)} kernel builds the GPU tests asked for are not in {LIST.name}"
            f" (compiled one by one instead): python tests/gpu_builds.py {log}"
        )


@pytest.fixture(scope="session")
def toolkit():
    """The CUDA toolkit nqprof finds (nvcc, headers, cudadevrt); the test is skipped, with
    the reason, where there is none."""
    from nqprof.cuda.toolkit import find_toolkit
    from nqprof.errors import UnavailableError

    try:
        return find_toolkit()
    except UnavailableError as exc:
        pytest.skip(str(exc))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    reason = getattr(item.config, "_nqprof_no_gpu", None)
    if reason and item.get_closest_marker("gpu"):
        pytest.fail(
            "a GPU is required (--require-gpu / NQPROF_REQUIRE_GPU=1) "
            f"and no GPU run is possible here: {reason}",
            pytrace=False,
        )


def pytest_unconfigure(config):
    import sys

    runners = sys.modules.get("nqprof.runners")
    if runners is not None:
        runners.keep_spares(False)  # and the spare that waits is ended


@pytest.fixture
def register_strategy(monkeypatch):
    """A function that registers test doubles as the strategy registry's own for this test
    (by name, as the registry's entry points and its cache hold them)."""
    from nqprof import strategies

    def register(*doubles) -> None:
        for double in doubles:
            monkeypatch.setitem(strategies._table(), double.name, "unused")
            monkeypatch.setitem(strategies._cache, double.name, double)

    return register


@pytest.fixture(scope="session")
def load_tool():
    """``load_tool("name")``: tools/name.py imported as a module (once a session)."""
    import importlib.util
    import sys
    from pathlib import Path

    tools = Path(__file__).resolve().parent.parent / "tools"

    def load(name: str):
        key = f"nqprof_tool_{name}"
        if key not in sys.modules:
            spec = importlib.util.spec_from_file_location(key, tools / f"{name}.py")
            module = importlib.util.module_from_spec(spec)
            sys.modules[key] = module  # dataclasses look their module up
            spec.loader.exec_module(module)
        return sys.modules[key]

    return load
