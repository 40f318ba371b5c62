"""The GPU tests' prebuild (tests/gpu_builds.py, nqprof.cuda.build.prebuild and its log):
every listed build names a catalogued source, a log's requests are read once each, what the
list misses is named, and a prebuilt variant is the cubin a later build finds."""

import json

import gpu_builds
import pytest

from nqprof.cuda import build


def test_every_listed_build_names_a_catalogued_source_with_its_defines():
    listed = gpu_builds.read_list()
    for (src, defines), request in zip(gpu_builds.sources_of(listed), listed, strict=True):
        assert src.file == request["file"]
        assert all(isinstance(v, int | str) for v in defines.values()), request


def test_the_log_is_read_once_per_request_and_the_list_names_what_it_misses(tmp_path, monkeypatch):
    log = tmp_path / "builds.jsonl"
    monkeypatch.setenv(build.BUILD_LOG_VARIABLE, str(log))
    from nqprof.catalog import catalog

    src = catalog()["feinbube.cu"]
    build._log_request(src, {"B": 2, "A": 1})
    build._log_request(src, {"A": 1, "B": 2})  # the same build, its defines in another order
    build._log_request(src, None)
    with log.open("a") as f:
        f.write("\n")
    asked = gpu_builds.read_log(log)
    assert asked == [
        {"defines": {"A": 1, "B": 2}, "file": "feinbube.cu"},
        {"defines": {}, "file": "feinbube.cu"},
    ]
    assert gpu_builds.missing(asked[:1], asked) == asked[1:]
    assert gpu_builds.missing(asked, asked) == []
    assert gpu_builds.read_log(tmp_path / "absent.jsonl") == []
    listed = tmp_path / "list.json"
    gpu_builds.write_list(asked[::-1], listed)
    assert gpu_builds.read_list(listed) == asked
    assert json.loads(listed.read_text())["builds"] == asked


def test_no_log_without_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv(build.BUILD_LOG_VARIABLE, raising=False)
    monkeypatch.chdir(tmp_path)
    from nqprof.catalog import catalog

    build._log_request(catalog()["feinbube.cu"], {})
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_prebuild_compiles_each_variant_once_into_the_cache(toolkit, tmp_path, monkeypatch):
    monkeypatch.setenv("NQPROF_CACHE_DIR", str(tmp_path))
    from nqprof.catalog import catalog

    src = catalog()["hold.cu"]
    variants = [(src, {}), (src, {"NQ_TEST_UNUSED": 3})]
    assert build.prebuild(variants, "sm_90", toolkit) == (2, 0)
    assert build.prebuild(variants, "sm_90", toolkit) == (0, 2)
    assert build.prebuild([], "sm_90", toolkit) == (0, 0)
    cubins = sorted(p.name for p in (tmp_path / "kernels").glob("*.cubin"))
    assert len(cubins) == 2 and all(p.startswith("hold-sm_90-") for p in cubins), cubins
    path, _, cached = build.cubin(src, {"NQ_TEST_UNUSED": 3}, "sm_90", toolkit)
    assert cached and path.name in cubins
