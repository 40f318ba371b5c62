"""The profiled round of a benchmark case (``pytest --nq-trace``): after a case's timed
rounds, one more run of the same case in a child process under Nsight Systems.

The child is ``nsys profile -t cuda,nvtx ... python -m nqprof.cli solve N -s STRATEGY -p k=v
... --rounds 1 --warmup 1``: one untimed warm-up round (lazy loading) and one round, so the
trace's NVTX ranges hold each generation twice and the stored summary is read per round
(:mod:`nqprof.analysis.trace_history`). The timed rounds are never under nsys: the child
starts after they were handed to pytest-benchmark, and after this case's worker closed.

Where the traces go (``<case>`` is the test's name, file-name safe):

* ``--nq-trace`` with a saved run (``--benchmark-autosave``/``--benchmark-save``):
  ``<storage>/<machine id>/traces/<trace run>/<case>.sqlite`` (and ``.nsys-rep``), beside the
  JSON file pytest-benchmark writes; the case's record names the file relative to that JSON's
  folder, so the history can be moved as a whole.
* ``--nq-trace-dir=DIR``: ``DIR/<trace run>/<case>.sqlite``, named by its absolute path.
* ``--nq-trace`` without saving: a folder under the system's temporary folder (never the
  source tree), named at the end of the session.

A CDP strategy that keeps a device timeline (dp2, dp3, dpswap) gets one more child, not under
nsys, with ``timeline=1``: its child grids per generation, which Nsight Systems does not see,
go into the record as ``device`` (:func:`nqprof.analysis.trace_history.device_ranges`).

``<trace run>`` is the session's start time and process id (``20261124-013000-4242``):
pytest-benchmark names its file only at the session's end, so the saved JSON carries the
trace run in ``nqprof.traces`` and every case's ``extra_info["trace"]`` carries its file.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .textfmt import plural

#: The key of a case's trace record in extra_info.
TRACE_KEY = "trace"
#: What a CPU case's record says instead of a trace.
CPU_NOTE = "no GPU trace for CPU strategies"
#: Rounds of the profiled child: warm-up, then timed.
PROFILED_WARMUP, PROFILED_ROUNDS = 1, 1


def storage_folder(storage: str) -> Path | None:
    """The folder of a ``--benchmark-storage`` value (``file://PATH`` or PATH); None for
    another backend (elasticsearch)."""
    if "://" in storage:
        scheme, _, rest = storage.partition("://")
        return Path(rest) if scheme == "file" else None
    return Path(storage)


def run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"


def file_stem(name: str) -> str:
    """A file-name-safe form of a test name such as ``test_nqueens[dp3-N12-depth=3]``."""
    return re.sub(r"[^A-Za-z0-9.=-]+", "_", name).strip("_.")[:120] or "case"


def solve_argv(
    case,
    warmup: int = PROFILED_WARMUP,
    rounds: int = PROFILED_ROUNDS,
    timeout: float | None = None,
    more: tuple[tuple[str, str], ...] = (),
) -> list[str]:
    """The child command that runs ``case`` (a :class:`~nqprof.options.Case`) once more
    (``more``: parameters added)."""
    argv = [sys.executable, "-m", "nqprof.cli", "solve", str(case.n), "-s", case.strategy]
    for key, value in (*case.given, *more):
        argv += ["-p", f"{key}={value}"]
    argv += ["--rounds", str(rounds), "--warmup", str(warmup), "-q"]
    if timeout is not None:
        argv += ["--timeout", f"{timeout:g}"]
    return argv


#: Seconds the timeline=1 child of a CDP case may take.
DEVICE_TIMELINE_TIMEOUT = 600


def keeps_device_timeline(strategy, case) -> bool:
    """Whether a case gets a device timeline beside its trace: a CDP strategy with the
    ``timeline`` parameter, run without ``timeline`` or ``launch`` given (launch=record
    replays the children from the host, and the trace sees them)."""
    names = {p.name for p in getattr(strategy, "params", ())}
    return (
        bool(getattr(strategy, "cdp", False))
        and "timeline" in names
        and not ({"timeline", "launch"} & {key for key, _ in case.given})
    )


class Tracer:
    """The traces of one pytest session: where they go and how each case is profiled."""

    key = TRACE_KEY

    def __init__(self, nsys: Path, folder: Path | None, relative_to: Path | None = None):
        #: the nsys executable (found when the session started)
        self.nsys = nsys
        self.run = run_id()
        #: None: a temporary folder, made on the first trace
        self.folder = folder / self.run if folder is not None else None
        #: where the saved JSON lands: files are named relative to it
        self.relative_to = relative_to
        self.traced: list[str] = []
        #: traced cases whose trace looks broken (NVTX ranges, no CUDA activity)
        self.suspect: list[str] = []
        self.missing: list[tuple[str, str]] = []

    def _folder(self) -> Path:
        if self.folder is None:
            self.folder = Path(tempfile.mkdtemp(prefix=f"nqprof-traces-{self.run}-"))
        self.folder.mkdir(parents=True, exist_ok=True)
        return self.folder

    def _name(self, path: Path) -> str:
        if self.relative_to is not None:
            try:
                return path.resolve().relative_to(self.relative_to.resolve()).as_posix()
            except ValueError:
                pass
        return str(path.resolve())

    def profile(self, bench) -> dict[str, Any]:
        """Profile ``bench``'s case (an :class:`~nqprof.nqbench.NQBench`) once; the record for
        its extra_info: the trace file and the per-range summary, or why there is none."""
        name = getattr(bench.benchmark, "name", None) or bench.case.id
        if not bench.strategy.needs_gpu:
            return self._missing(name, CPU_NOTE)
        from .analysis import trace as nsys_trace

        argv = solve_argv(bench.case, timeout=bench.settings.timeout)
        prefix = self._folder() / file_stem(name)
        try:
            sqlite = nsys_trace.profile(argv, prefix, trace="cuda,nvtx", nsys=self.nsys, echo=False)
            loaded = nsys_trace.load(sqlite)
            ranges = nsys_trace.summary_records(loaded)
            held = nsys_trace.contents(loaded)
        except Exception as exc:  # noqa: BLE001 - the timing stands; the record says why
            return self._missing(name, f"the profiled round failed: {exc}")
        record: dict[str, Any] = {
            "kind": "nsys",
            "file": self._name(sqlite),
            "run": self.run,
            "rounds": PROFILED_WARMUP + PROFILED_ROUNDS,
            "command": " ".join(argv[1:]),
            "ranges": ranges,
            **{k: v for k, v in held.items() if k != "warning"},
        }
        if held["warning"]:
            record["warning"] = held["warning"]
            self.suspect.append(name)
        report = sqlite.with_suffix(".nsys-rep")
        if report.is_file():
            record["report"] = self._name(report)
        if keeps_device_timeline(bench.strategy, bench.case):
            record.update(self._device_timeline(bench, prefix))
        self.traced.append(name)
        return record

    def _device_timeline(self, bench, prefix: Path) -> dict[str, Any]:
        """A CDP case's child grids, which Nsight Systems does not see: one more child (not
        under nsys) with ``timeline=1``, its run record beside the trace; the per-generation
        summary as ``device``, or why there is none as ``device_missing``."""
        import json
        import subprocess

        from .analysis.trace_history import device_ranges

        output = prefix.with_name(prefix.name + ".timeline.json")
        argv = solve_argv(bench.case, timeout=bench.settings.timeout, more=(("timeline", "1"),)) + [
            "-o",
            str(output),
        ]
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=DEVICE_TIMELINE_TIMEOUT,
            )
            if done.returncode != 0:
                last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
                return {
                    "device_missing": "the timeline=1 run failed (exit "
                    f"status {done.returncode}): {last}"
                }
            ranges = device_ranges(
                json.loads(output.read_text(encoding="utf-8")).get("timeline") or {}
            )
        except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
            return {"device_missing": f"the timeline=1 run failed: {exc}"}
        if not ranges:
            return {"device_missing": "the timeline=1 run recorded no grids"}
        return {"device": ranges, "device_file": self._name(output)}

    def _missing(self, name: str, why: str) -> dict[str, Any]:
        self.missing.append((name, why))
        return {"missing": why}

    def summary_lines(self) -> list[str]:
        """What the terminal summary says of this session's traces."""
        lines = []
        if self.traced:
            lines.append(
                f"nqprof: Nsight Systems traces of {plural(len(self.traced), 'case')} in "
                f"{self.folder} (one profiled round each, outside the timed rounds)"
            )
        for name in self.suspect:
            from .analysis.trace import NO_CUDA_WARNING

            lines.append(f"nqprof: the trace of {name} is {NO_CUDA_WARNING}")
        gpu_missing = [(n, w) for n, w in self.missing if w != CPU_NOTE]
        for name, why in gpu_missing:
            lines.append(f"nqprof: no trace for {name}: {why}")
        cpu = len(self.missing) - len(gpu_missing)
        if cpu:
            lines.append(f"nqprof: {plural(cpu, 'CPU case')} without a trace ({CPU_NOTE})")
        return lines

    def json_info(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "folder": None if self.folder is None else self._name(self.folder),
            "traced": len(self.traced),
            "suspect": len(self.suspect),
            "missing": len(self.missing),
        }
