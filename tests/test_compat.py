"""A toolkit against the driver (nqprof.cuda.compat) and how build() reports it, with a
fake PyCUDA: no GPU needed."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from nqprof.catalog import catalog
from nqprof.cuda import compat
from nqprof.cuda.compat import (
    check_toolkit_against_driver,
    driver_can_load,
    driver_cuda_version,
    parse_release,
)
from nqprof.cuda.toolkit import Toolkit
from nqprof.errors import InputError, UnavailableError


@pytest.mark.parametrize(
    "text,release",
    [
        ("13.0", (13, 0)),
        ("cuda13.5", (13, 5)),
        ("12.8.1", (12, 8)),
        (13000, (13, 0)),
        (12080, (12, 8)),
        (13020, (13, 2)),
    ],
)
def test_parse_release(text, release):
    assert parse_release(text) == release


def test_parse_release_rejects_junk():
    with pytest.raises(InputError):
        parse_release("thirteen")


def test_driver_cuda_version_from_pycuda():
    assert driver_cuda_version(types.SimpleNamespace(get_driver_version=lambda: 13000)) == "13.0"
    assert driver_cuda_version(types.SimpleNamespace(get_driver_version=lambda: 12090)) == "12.9"


@pytest.mark.parametrize("cdp", [False, True])
@pytest.mark.parametrize(
    "toolkit,driver", [("13.0", "13.0"), ("12.8", "13.0"), ("12.4", "12.8"), ("13.2", "13.5")]
)
def test_toolkit_not_newer_than_driver_is_fine(toolkit, driver, cdp):
    assert check_toolkit_against_driver(toolkit, driver, cdp) is None
    assert driver_can_load(toolkit, driver, cdp)


def test_newer_minor_toolkit_cdp_is_a_note_naming_both_versions():
    """A dynamic-parallelism source is linked ahead of time into a cubin (no PTX for the
    driver to JIT-compile), so it loads as a plain one does, with a note."""
    message = check_toolkit_against_driver("13.5", "13.0", cdp=True)
    assert message and "\n" not in message
    assert "13.5" in message and "13.0" in message and "driver" in message
    assert "linked ahead of time" in message and "minor-version compatibility" in message
    assert driver_can_load("13.5", "13.0", cdp=True)


def test_newer_minor_toolkit_plain_is_a_note():
    message = check_toolkit_against_driver("13.5", "13.0", cdp=False)
    assert message and "\n" not in message
    assert "13.5" in message and "13.0" in message and "minor-version compatibility" in message
    assert driver_can_load("13.5", "13.0", cdp=False)


@pytest.mark.parametrize("cdp", [False, True])
def test_newer_major_toolkit_is_refused(cdp):
    message = check_toolkit_against_driver("13.0", "12.8", cdp)
    assert message and "13.0" in message and "12.8" in message and "CUDA 13.x driver" in message
    assert not driver_can_load("13.0", "12.8", cdp)


def test_cuda12_minor_rules():
    assert driver_can_load("12.8", "12.4", cdp=False) and driver_can_load("12.8", "12.4", cdp=True)
    assert "12.8" in check_toolkit_against_driver("12.8", "12.4", cdp=True)


# --- build() with a fake PyCUDA ----------------------------------------------------------


@pytest.fixture
def fake_pycuda(monkeypatch):
    """pycuda.driver (driver CUDA 13.0, an sm_90 device) whose module_from_file records the
    cubins it loads, and a kernel cache whose builds record what they were asked for
    (source, cdp, defines, arch)."""
    built = []

    class Error(Exception):
        pass

    driver = types.ModuleType("pycuda.driver")
    driver.Error = Error
    driver.get_driver_version = lambda: 13000
    driver.Context = types.SimpleNamespace(
        get_device=lambda: types.SimpleNamespace(compute_capability=lambda: (9, 0))
    )
    driver.module_from_file = lambda path: ("module", path)
    package = types.ModuleType("pycuda")
    package.driver = driver
    for name, module in (("pycuda", package), ("pycuda.driver", driver)):
        monkeypatch.setitem(sys.modules, name, module)

    def cubin(src, defines, arch, toolkit):
        built.append((src.file, src.cdp, dict(defines or {}), arch))
        return Path(f"/cache/{src.file}.cubin"), "hash", False

    monkeypatch.setattr("nqprof.cuda.build.cubin", cubin)
    return built


def _use_toolkit(monkeypatch, version: str) -> None:
    root = Path("/opt/fake-cuda")
    toolkit = Toolkit(
        root,
        root / "bin" / "nvcc",
        version,
        root / "include",
        root / "lib64",
        None,
        "NQPROF_CUDA_HOME",
    )
    monkeypatch.setattr("nqprof.cuda.toolkit.find_toolkit", lambda: toolkit)


def test_build_of_a_cdp_source_with_newer_minor_toolkit_has_a_note(fake_pycuda, monkeypatch):
    from nqprof.cuda.build import build

    _use_toolkit(monkeypatch, "13.5")
    module = build(catalog()["dp1.cu"])
    assert [(f, c) for f, c, _, _ in fake_pycuda] == [("dp1.cu", True)]
    assert module.notes == [check_toolkit_against_driver("13.5", "13.0", cdp=True)]


def test_build_refuses_a_newer_major_toolkit(fake_pycuda, monkeypatch):
    from nqprof.cuda.build import build

    _use_toolkit(monkeypatch, "14.0")
    with pytest.raises(UnavailableError) as info:
        build(catalog()["dp1.cu"])
    message = str(info.value)
    assert "dp1.cu" in message and "14.0" in message and "13.0" in message and "driver" in message
    assert fake_pycuda == []  # refused before compiling


def test_build_notes_newer_toolkit_for_plain_source(fake_pycuda, monkeypatch):
    from nqprof.cuda.build import build

    _use_toolkit(monkeypatch, "13.5")
    module = build(catalog()["feinbube.cu"], {"NQ_N": 12, "NQ_BLOCK": 64})
    assert fake_pycuda == [("feinbube.cu", False, {"NQ_N": 12, "NQ_BLOCK": 64}, "sm_90")]
    assert module.module == ("module", "/cache/feinbube.cu.cubin")
    assert module.toolkit_version == "13.5" and module.arch == "sm_90"
    assert module.notes == [check_toolkit_against_driver("13.5", "13.0", cdp=False)]


@pytest.mark.parametrize("file,cdp", [("feinbube.cu", False), ("dp1.cu", True)])
def test_build_with_matching_toolkit_has_no_note(fake_pycuda, monkeypatch, file, cdp):
    from nqprof.cuda.build import build

    _use_toolkit(monkeypatch, "13.0")
    module = build(catalog()[file])
    assert [(f, c) for f, c, _, _ in fake_pycuda] == [(file, cdp)] and module.notes == []


def test_module_doc_names_the_error():
    assert "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" in compat.__doc__
