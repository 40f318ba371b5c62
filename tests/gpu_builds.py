"""The kernel builds the GPU tests ask for, built at once before they run.

On a fresh host every kernel variant a test asks for (a source with its defines) is compiled
by nvcc on first use, one after another inside the tests' worker processes: about 30 s of
the GPU tests' time on an H200 host. ``tests/data/gpu-builds.json`` lists those variants;
the GPU tests' session compiles them in parallel into nqprof's cache before the first test
(:func:`nqprof.cuda.build.prebuild`), logs what the run really asked for
(``NQPROF_BUILD_LOG``) and names, at its end, any build the list misses, so the list is
refreshed (``python tests/gpu_builds.py LOG``) instead of going stale in silence."""

from __future__ import annotations

import json
import sys
from pathlib import Path

LIST = Path(__file__).parent / "data" / "gpu-builds.json"


def key(request: dict) -> str:
    return json.dumps(request, sort_keys=True)


def read_list(path: Path = LIST) -> list[dict]:
    return json.loads(path.read_text())["builds"]


def read_log(path: Path) -> list[dict]:
    """The distinct requests of a build log, in a stable order."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    requests = {key(r): r for r in (json.loads(line) for line in lines if line.strip())}
    return [requests[k] for k in sorted(requests)]


def missing(listed: list[dict], asked: list[dict]) -> list[dict]:
    """The requests of ``asked`` that ``listed`` does not hold."""
    have = {key(r) for r in listed}
    return [r for r in asked if key(r) not in have]


def sources_of(listed: list[dict]):
    """(KernelSource, defines) for each listed build; KeyError for a file the catalog lacks."""
    from nqprof.catalog import catalog

    sources = catalog()
    return [(sources[r["file"]], r["defines"]) for r in listed]


def write_list(requests: list[dict], path: Path = LIST) -> None:
    doc = {
        "about": "kernel builds the GPU tests ask for, prebuilt in parallel (tests/gpu_builds.py)",
        "builds": sorted(requests, key=key),
    }
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":  # python tests/gpu_builds.py LOG: the list becomes the log's requests
    write_list(read_log(Path(sys.argv[1])))
    print(f"wrote {LIST}")
