"""Shared test set-up: GPU tests are skipped, with the reason, where no GPU run can happen."""

import pytest


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    from nqprof.cuda.device import gpu_available

    ok, reason = gpu_available()
    if not ok:
        skip = pytest.mark.skip(reason=f"no GPU run possible here: {reason}")
        for item in gpu_items:
            item.add_marker(skip)


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
