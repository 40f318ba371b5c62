"""What the driver does with code from a toolkit newer than itself, on a real GPU.

Loads the artifacts tools/build_probe_artifacts.sh builds (``.gpuhost/probe``, or
``NQPROF_PROBE_DIR``) with tools/toolkit_probe.py and checks the facts nqprof.cuda.compat
encodes: within one major release, cubins (SASS) from a newer toolkit load and run; PTX
from a newer toolkit does not JIT-compile (CUDA_ERROR_UNSUPPORTED_PTX_VERSION), so the
driver cannot link a newer toolkit's dynamic-parallelism build; and nqprof's verdict
agrees with what happened to each artifact nqprof's build would make.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[1]
PROBE_DIR = Path(os.environ.get("NQPROF_PROBE_DIR", ROOT / ".gpuhost" / "probe"))
PROBE_TOOL = ROOT / "tools" / "toolkit_probe.py"


def _probe_module():
    spec = importlib.util.spec_from_file_location("nqprof_toolkit_probe", PROBE_TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def probed():
    """(probe module, driver release, {case name: outcome})."""
    if not PROBE_TOOL.is_file():
        pytest.skip(f"{PROBE_TOOL} is not here (not a source checkout)")
    if not PROBE_DIR.is_dir():
        pytest.skip(
            f"no probe artifacts: {PROBE_DIR} is absent "
            "(build them with tools/build_probe_artifacts.sh)"
        )
    probe = _probe_module()
    driver, outcomes = probe.probe(PROBE_DIR)
    if not outcomes:
        pytest.skip(f"no probe artifacts in {PROBE_DIR}")
    for o in outcomes:  # shown with -rA or on failure
        print(o.line())
    return probe, driver, {o.case.name: o for o in outcomes}


def _split(probed):
    """The cases' releases: (not newer than the driver, newer in the same major release)."""
    probe, driver, outcomes = probed
    d = probe.release_key(driver)
    releases = {o.case.toolkit for o in outcomes.values()}
    old = sorted((r for r in releases if probe.release_key(r) <= d), key=probe.release_key)
    newer = sorted(
        (r for r in releases if probe.release_key(r) > d and probe.release_key(r)[0] == d[0]),
        key=probe.release_key,
    )
    return old, newer


def _get(outcomes, name):
    if name not in outcomes:
        pytest.skip(f"artifact {name} is missing")
    return outcomes[name]


def test_controls_built_by_the_drivers_release_all_run(probed):
    """Every kind of artifact from a toolkit the driver supports loads and computes right."""
    _, driver, outcomes = probed
    old, _ = _split(probed)
    if not old:
        pytest.skip(f"no artifacts from a toolkit at or below the driver's CUDA {driver}")
    checked = [
        o
        for o in outcomes.values()
        if o.case.toolkit in old and (o.case.library_toolkit or o.case.toolkit) in old
    ]
    failed = [o.line() for o in checked if not o.ok]
    assert checked and not failed, "\n".join(failed)


@pytest.fixture
def newer(probed):
    _, driver, _ = probed
    _, newer = _split(probed)
    if not newer:
        pytest.skip(
            "no artifacts from a toolkit newer than the "
            f"driver's CUDA {driver} in the same major release"
        )
    return newer


def test_newer_cubin_loads_and_runs(probed, newer):
    """Minor-version compatibility: SASS from a newer 13.x toolkit loads on the older driver."""
    _, _, outcomes = probed
    for r in newer:
        for name in (f"plain.{r}.cubin", f"feinbube.{r}.cubin"):
            o = _get(outcomes, name)
            assert o.ok, o.line()


def _assert_newer_ptx_refused(o) -> None:
    """The driver neither loaded nor ran the artifact: its PTX is newer than the driver."""
    assert not o.ok and not o.loaded, o.line()
    assert o.error == "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", o.line()


def test_newer_ptx_is_not_jit_compiled(probed, newer):
    _, _, outcomes = probed
    for r in newer:
        _assert_newer_ptx_refused(_get(outcomes, f"plain.{r}.ptx"))


def test_newer_cdp_build_is_not_linked_by_the_driver(probed, newer):
    """What PyCUDA's DynamicSourceModule does with a newer toolkit: the driver's linker is
    handed newer PTX and refuses it."""
    _, _, outcomes = probed
    for r in newer:
        _assert_newer_ptx_refused(_get(outcomes, f"cdp.{r}.rdc.ptx + cudadevrt.{r}.a"))


def test_newer_cdp_fully_linked_by_nvlink_loads_and_runs(probed, newer):
    """Linked ahead of time by the newer toolkit's nvlink, CDP code is plain SASS again."""
    _, _, outcomes = probed
    for r in newer:
        o = _get(outcomes, f"cdp.{r}.linked.cubin")
        assert o.ok, o.line()


def test_nqprof_verdict_agrees_with_the_driver(probed):
    """For each artifact nqprof's build makes (plain: a cubin; CDP: a cubin linked ahead of
    time by nvlink with cudadevrt), nqprof refuses exactly the ones the driver cannot load."""
    probe, driver, outcomes = probed
    rows = probe.nqprof_verdicts(driver, list(outcomes.values()))
    assert rows
    wrong = [
        f"{o.line()}  <- nqprof expects {'OK' if expects else 'a failure'}"
        for o, expects, _ in rows
        if expects != o.ok
    ]
    assert not wrong, "\n".join(wrong)
