"""Instruction counts of CPU cases: a metric a noisy host cannot move.

A CPU case's time moves with the host's clock speed (13 to 88% between runs on virtual
machines), so a comparison of times cannot catch a 5% change there. The instructions one
round executes do not move: they are counted here under Valgrind's callgrind, which runs
the program on a simulated CPU and counts every instruction it executes (``Ir``).

What is counted: the instructions executed inside the C function each strategy's round
counts in (:data:`COUNTING_FUNCTIONS`; kernels/cpu), its callees included, in every thread,
summed. Callgrind starts with collection off (``--collect-atstart=no``) and turns it on in a
thread while that thread is inside one of those functions (``--toggle-collect``): Python,
the session's opening (serial-d4's and multicore's tasks are made when it opens) and
multicore's thread pool around the tasks are not counted. serial counts in
``nq_py_serial`` (the extension's entry point: its argument parsing, the GIL's release
around the search and the result's conversion are a few hundred of its instructions);
serial-d4 and multicore in ``nq_cst_count``, called once per constellation task by
whichever thread takes it: multicore's sum over its threads is the same whatever thread
takes which task, while its split over the threads is not (the record keeps both).

How: one Valgrind process per :class:`Counter` runs Python with nqprof imported
(``python -m nqprof.instructions``, a few seconds under Valgrind) and forks one process per
case, which opens the case's session, runs one round, verifies its count and exits, and
whose counts callgrind writes to a file of its own; the parent parses that file
(:func:`parse_callgrind`). No worker processes and no watchdog inside: Valgrind follows the
forks, and multicore's pthreads run inside the forked process. Nothing is cached: every
count is measured by the extension this nqprof imports, and the record names that build
(``extension``: a hash of its file).

A count becomes pytest-benchmark's "time" at one nanosecond per instruction
(:data:`SECONDS_PER_INSTRUCTION`) with ``pytest --nq-cpu-metric=instructions``
(:mod:`nqprof.benchinstr`), and a record's ``instructions`` with ``nqprof solve
--instructions``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import CountMismatchError, InputError, UnavailableError, WatchdogError

TOOL = "callgrind"
#: The C functions (kernels/cpu) each of nqprof's CPU strategies counts a round in. Another
#: CPU strategy names its own as ``instruction_functions`` (a tuple of symbol names).
COUNTING_FUNCTIONS: dict[str, tuple[str, ...]] = {
    "serial": ("nq_py_serial",),
    "serial-d4": ("nq_cst_count",),
    "multicore": ("nq_cst_count",),
}
#: What an instruction is worth as pytest-benchmark's "seconds": one nanosecond.
SECONDS_PER_INSTRUCTION = 1e-9
#: The clock name pytest-benchmark saves for CPU cases measured in instructions.
CLOCK_NAME = "nqprof.instructions"
#: The Valgrind to run: a path or a name on PATH (default: valgrind).
VALGRIND_VARIABLE = "NQPROF_VALGRIND"
#: The event callgrind counts executed instructions as.
EVENT = "Ir"


# -- callgrind's output ----------------------------------------------------------------


@dataclass
class CallgrindProfile:
    """What a callgrind output file says (one file: one process, or one thread of it)."""

    events: tuple[str, ...]
    #: The file's total of each event (its ``totals:`` or ``summary:`` line).
    totals: dict[str, int]
    #: Each function's own cost of each event, callees left out: ``(object, function)``.
    functions: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    #: Each call's inclusive cost (the callee's and its callees'), summed over the calls
    #: from one place: ``(caller object, caller, callee object, callee)``.
    calls: dict[tuple[str, str, str, str], dict[str, int]] = field(default_factory=dict)
    pid: int | None = None
    thread: int | None = None
    creator: str = ""

    def total(self, event: str = EVENT) -> int:
        return self.totals.get(event, 0)

    def objects_of(self, functions) -> set[str]:
        """The objects that hold the named functions (those that ran)."""
        return {obj for obj, fn in self.functions if fn in functions}

    def calls_into(self, inside, callers: set[str], event: str = EVENT) -> int:
        """The inclusive cost of the calls that functions of the objects ``callers`` made
        into functions of objects ``inside`` (a predicate on an object's path) but not of
        ``callers``."""
        return sum(
            cost.get(event, 0)
            for (caller, _, callee, _), cost in self.calls.items()
            if caller in callers and callee not in callers and inside(callee)
        )

    def by_object(self, event: str = EVENT) -> dict[str, int]:
        """Each object file's (its base name's) instructions, largest first."""
        out: dict[str, int] = {}
        for (obj, _), costs in self.functions.items():
            name = Path(obj).name if obj else "?"
            out[name] = out.get(name, 0) + costs.get(event, 0)
        return dict(sorted(((k, v) for k, v in out.items() if v), key=lambda kv: -kv[1]))


def _name(value: str, table: dict[str, str]) -> str:
    """A name of callgrind's compressed form: ``(id) name`` defines id, ``(id)`` uses it."""
    value = value.strip()
    if value.startswith("("):
        key, _, rest = value[1:].partition(")")
        rest = rest.strip()
        if rest:
            table[key] = rest
            return rest
        if key not in table:
            raise ValueError(f"name ({key}) used before it is defined")
        return table[key]
    return value


def parse_callgrind(text: str) -> CallgrindProfile:
    """Parse callgrind's output format (Valgrind's manual, "Callgrind Format
    Specification"): the events, the totals, each function's own cost. A cost line after a
    ``calls=`` line is the call's inclusive cost, not the caller's own. The functions' own
    costs must add up to the totals; ValueError (naming the line) on anything else."""
    events: tuple[str, ...] = ()
    positions = 1
    totals: dict[str, int] | None = None
    summary: dict[str, int] | None = None
    functions: dict[tuple[str, str], dict[str, int]] = {}
    calls: dict[tuple[str, str, str, str], dict[str, int]] = {}
    names: dict[str, dict[str, str]] = {"ob": {}, "fl": {}, "fn": {}}
    obj, fn = "", ""
    callee_obj: str | None = None  # cob=: the next call's object (default: the caller's)
    callee = ""
    call_cost_next = False
    header: dict[str, str] = {}
    number = 0

    def costs_of(words: list[str], what: str) -> dict[str, int]:
        if not events:
            raise ValueError(f"line {number}: {what} before the events: line")
        if len(words) > len(events):
            raise ValueError(f"line {number}: {len(words)} costs for {len(events)} events")
        return {e: int(w) for e, w in zip(events, words, strict=False)}

    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        first = line[0]
        try:
            if first.isdigit() or first in "+-*":
                words = line.split()
                costs = costs_of(words[positions:], "a cost line")
                if call_cost_next:  # the call's inclusive cost
                    call_cost_next = False
                    edge = calls.setdefault((obj, fn, callee_obj or obj, callee), {})
                    for event, value in costs.items():
                        edge[event] = edge.get(event, 0) + value
                    callee_obj = None
                    continue
                own = functions.setdefault((obj, fn), {})
                for event, value in costs.items():
                    own[event] = own.get(event, 0) + value
                continue
            key, sep, value = line.partition("=")
            if sep and key in ("ob", "fl", "fi", "fe", "fn", "cob", "cfi", "cfl", "cfn"):
                table = names["fl" if key in ("fi", "fe", "cfi", "cfl") else key.lstrip("c")]
                resolved = _name(value, table)
                if key == "ob":
                    obj = resolved
                elif key == "fn":
                    fn = resolved
                elif key == "cob":
                    callee_obj = resolved
                elif key == "cfn":
                    callee = resolved
                continue
            if sep and key == "calls":
                if call_cost_next:
                    raise ValueError("calls= without its cost line")
                call_cost_next = True
                continue
            if sep and key in ("jump", "jcnd"):
                continue
            key, sep, value = line.partition(":")
            if not sep:
                raise ValueError(f"line {number}: not callgrind's format: {line[:60]!r}")
            value = value.strip()
            if key == "events":
                events = tuple(value.split())
            elif key == "positions":
                positions = len(value.split())
            elif key == "totals":
                totals = costs_of(value.split(), "totals:")
            elif key == "summary":
                summary = costs_of(value.split(), "summary:")
            else:
                header[key] = value
        except ValueError as exc:
            if str(exc).startswith("line "):
                raise
            raise ValueError(f"line {number}: {exc}") from None
    if not events:
        raise ValueError("not callgrind's output: no events: line")
    total = totals if totals is not None else summary
    if total is None:
        raise ValueError("callgrind's output has no totals: or summary: line")
    total = {e: total.get(e, 0) for e in events}
    own = {e: sum(c.get(e, 0) for c in functions.values()) for e in events}
    if own != total:
        raise ValueError(f"the functions' own costs {own} do not add up to the totals {total}")
    return CallgrindProfile(
        events=events,
        totals=total,
        functions=functions,
        calls=calls,
        pid=int(header["pid"]) if header.get("pid", "").isdigit() else None,
        thread=int(header["thread"]) if header.get("thread", "").isdigit() else None,
        creator=header.get("creator", ""),
    )


# -- what can be counted ---------------------------------------------------------------


def find_valgrind() -> tuple[str, str]:
    """(path, version) of the Valgrind to run ($NQPROF_VALGRIND, else valgrind on PATH);
    UnavailableError saying how to get it where there is none."""
    import shutil
    import subprocess

    given = os.environ.get(VALGRIND_VARIABLE, "").strip()
    path = shutil.which(given or "valgrind")
    if path is None:
        where = f"{VALGRIND_VARIABLE}={given!r} is not a program" if given else "none on PATH"
        raise UnavailableError(
            f"instruction counts need Valgrind ({where}): install it (apt install valgrind) "
            f"or name it in {VALGRIND_VARIABLE}"
        )
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UnavailableError(f"{path} --version failed: {exc}") from None
    version = out.stdout.strip()
    if out.returncode != 0 or not version.startswith("valgrind-"):
        raise UnavailableError(f"{path} is not Valgrind (--version said {version[:60]!r})")
    return path, version


def counting_functions(strategy) -> tuple[str, ...]:
    """The C functions ``strategy``'s rounds count in; InputError for a GPU strategy,
    UnavailableError for a CPU strategy that names none."""
    if strategy.needs_gpu:
        raise InputError(
            f"instructions are for CPU cases: {strategy.name} runs on the GPU (its times are "
            "CUDA-event times, which a host's clock speed does not move)"
        )
    functions = getattr(strategy, "instruction_functions", None) or COUNTING_FUNCTIONS.get(
        strategy.name
    )
    if not functions:
        raise UnavailableError(
            f"no instruction count for {strategy.name}: it names no C function its rounds count "
            "in (instruction_functions)"
        )
    return tuple(functions)


def is_interpreter(path: str) -> bool:
    """Whether an object file is Python's interpreter: its library, or the executable where
    Python is linked into it."""
    name = Path(path).name
    return name.startswith("libpython") or (
        bool(path) and os.path.realpath(path) == os.path.realpath(sys.executable)
    )


def samples(record: Mapping[str, Any], rounds: int) -> list[float]:
    """A count as pytest-benchmark's samples: ``rounds`` times count * 1 ns."""
    return [record["count"] * SECONDS_PER_INSTRUCTION] * max(1, rounds)


def extension_hash() -> str:
    """A short hash of the C extension's file: the build whose instructions were counted."""
    import hashlib

    from .strategies.cpu_common import cpu_module

    return hashlib.sha256(Path(cpu_module().__file__).read_bytes()).hexdigest()[:16]


# -- the counter -----------------------------------------------------------------------


class Counter:
    """Measures CPU cases' instructions in one Valgrind process, started on the first
    case (a few seconds: Python and nqprof's imports under Valgrind) and kept for the next
    ones; each case is a process of its own, forked from it. ``timeout``: the seconds its
    start, and each case, may take (default: NQPROF_TIMEOUT's); a case past it kills the
    process (WatchdogError). Close it, or use it as a context manager."""

    def __init__(self, timeout: float | None = None):
        from .options import default_timeout

        self.valgrind, self.version = find_valgrind()
        self.timeout = default_timeout() if timeout is None else float(timeout)
        self._servers: dict[tuple[str, ...], _Server] = {}
        self._extension: str | None = None

    def measure(self, strategy, n: int, params: Mapping[str, Any]) -> dict[str, Any]:
        """The instructions of one verified round of ``strategy`` at ``n`` (``params``
        resolved): the record :attr:`RunRecord.instructions` keeps."""
        from .options import describe

        functions = counting_functions(strategy)
        own = strategy.name in COUNTING_FUNCTIONS and not getattr(
            strategy, "instruction_functions", None
        )
        # nqprof's counting functions never call one another: one process counts them all
        toggles = tuple(sorted({f for fs in COUNTING_FUNCTIONS.values() for f in fs}))
        key = toggles if own else functions
        label = describe(strategy.name, n, dict(params))
        server = self._servers.get(key)
        if server is None or not server.alive():
            server = self._servers[key] = _Server(self.valgrind, key, self.timeout, label)
        reply = server.ask({"strategy": strategy.name, "n": n, "params": dict(params)}, label)
        if "error" in reply:
            cls = CountMismatchError if reply.get("kind") == "count" else UnavailableError
            raise cls(f"{label} under Valgrind: {reply['error']}")
        profiles = server.profiles(reply["pid"])
        python_api = [p.calls_into(is_interpreter, p.objects_of(functions)) for p in profiles]
        threads = [p.total() - api for p, api in zip(profiles, python_api, strict=True)]
        if sum(threads) <= 0:
            raise UnavailableError(
                f"{label}: callgrind counted no instruction in {', '.join(functions)} (not "
                "called, or inlined: the extension's build names no such function)"
            )
        if self._extension is None:
            self._extension = extension_hash()
        return {
            "count": sum(threads),
            "tool": TOOL,
            "version": self.version,
            "functions": list(functions),
            "threads": [t for t in threads if t],
            "python_api": sum(python_api),
            "seconds": round(reply["seconds"], 3),
            "start_s": round(server.start_s, 3),
            "extension": self._extension,
        }

    def close(self) -> None:
        for server in self._servers.values():
            server.close()
        self._servers.clear()

    def __enter__(self) -> Counter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def measure(strategy, n: int, params: Mapping[str, Any], timeout: float | None = None):
    """One case's instructions (:meth:`Counter.measure`) in a Valgrind process of its own."""
    with Counter(timeout) as counter:
        return counter.measure(strategy, n, params)


class _Server:
    """One Valgrind process running :func:`serve` with the given functions toggled."""

    def __init__(self, valgrind: str, functions: tuple[str, ...], timeout: float, label: str):
        import subprocess
        import tempfile

        import nqprof

        self.timeout = timeout
        self.folder = Path(tempfile.mkdtemp(prefix="nqprof-callgrind-"))
        self._buffer = b""
        env = dict(os.environ)
        # the nqprof this process runs, first; the same string hashes in every process
        package_root = str(Path(nqprof.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join([package_root, *filter(None, [env.get("PYTHONPATH")])])
        env["PYTHONHASHSEED"] = "0"
        command = [
            valgrind,
            f"--tool={TOOL}",
            "-q",
            f"--callgrind-out-file={self.folder}/callgrind.out.%p",
            "--collect-atstart=no",
            "--separate-threads=yes",
            *(f"--toggle-collect={f}" for f in functions),
            sys.executable,
            "-m",
            "nqprof.instructions",
        ]
        self._stderr = open(self.folder / "stderr.txt", "wb")
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            start_new_session=True,  # its forks die with it (killpg); Ctrl-C is the parent's
        )
        try:
            ready = self._reply(f"Valgrind's start (for {label})")
        except BaseException:
            self.close()
            raise
        if not ready.get("ready"):
            self.close()
            raise UnavailableError(f"the process under Valgrind did not start: {ready}")
        self.start_s = time.perf_counter() - t0

    def alive(self) -> bool:
        return self.proc.poll() is None

    def ask(self, request: dict[str, Any], label: str) -> dict[str, Any]:
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except OSError:
            raise UnavailableError(f"{label}: the process under Valgrind {self._died()}") from None
        return self._reply(label)

    def _reply(self, what: str) -> dict[str, Any]:
        import select

        deadline = time.monotonic() + self.timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close(kill=True)
                raise WatchdogError(
                    f"{what} took more than {self.timeout:g} s under Valgrind (the timeout; "
                    "Valgrind runs a case about 50 times slower than it runs natively: give a "
                    "smaller N or a longer --timeout)"
                )
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                message = f"{what}: the process under Valgrind {self._died()}"
                self.close()
                raise UnavailableError(message)
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    def _died(self) -> str:
        try:
            code = self.proc.wait(timeout=10)
        except Exception:
            code = None
        self._stderr.flush()
        text = (self.folder / "stderr.txt").read_text(errors="replace").strip().splitlines()
        said = f": {text[-1].strip()}" if text else ""
        return f"ended (exit code {code}){said}"

    def profiles(self, pid: int) -> list[CallgrindProfile]:
        """The counts callgrind wrote for process ``pid`` (one file per thread, ``-01`` the
        main thread's, beside an empty one without a thread), parsed and removed."""
        files = sorted(self.folder.glob(f"callgrind.out.{pid}-*"))
        if not files:
            raise UnavailableError(f"callgrind wrote no output for process {pid}")
        out = []
        for path in files:
            try:
                out.append(parse_callgrind(path.read_text()))
            except ValueError as exc:
                raise UnavailableError(f"callgrind's {path.name}: {exc}") from None
            path.unlink()
        (self.folder / f"callgrind.out.{pid}").unlink(missing_ok=True)
        return out

    def close(self, kill: bool = False) -> None:
        """End the process (``kill``: at once; else it ends when its input does, or is
        killed after 10 s) and remove its folder."""
        import shutil
        import signal

        proc = self.proc if hasattr(self, "proc") else None
        if proc is not None and proc.poll() is None:
            try:
                if kill:
                    raise TimeoutError
                proc.stdin.close()
                proc.wait(timeout=10)
            except Exception:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)  # its forked case too
                except OSError:
                    pass
                proc.wait()
        if proc is not None:
            for stream in (proc.stdin, proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
        self._stderr.close()
        shutil.rmtree(self.folder, ignore_errors=True)


# -- what runs under Valgrind ------------------------------------------------------------


def _round(request: dict[str, Any], write) -> None:
    """In the forked process: open the case's session, run one round, verify its count."""
    from .problem import known_count
    from .strategies import get

    strategy = get(request["strategy"])
    n = int(request["n"])
    session = strategy.open(n, dict(request["params"]))
    try:
        m = session.run_once()
    finally:
        session.close()
    if m.count != known_count(n):
        write({"error": f"counted {m.count}, expected {known_count(n)}", "kind": "count"})
    else:
        write({"count": m.count})


def serve() -> int:
    """Answer requests (one JSON object a line on stdin) with one forked process each, which
    runs one round of the case; a reply (one JSON line on stdout) gives the process id whose
    callgrind output holds the round's instructions and the seconds it took. The strategies
    are imported here, before the forks."""
    from .strategies import get

    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # what anything else prints goes to stderr, not into the replies

    def reply(obj: dict[str, Any]) -> None:
        out.write(json.dumps(obj) + "\n")
        out.flush()

    reply({"ready": True, "pid": os.getpid()})
    for line in sys.stdin:
        request = json.loads(line)
        try:
            get(request["strategy"])
        except Exception as exc:
            reply({"error": f"{type(exc).__name__}: {exc}"})
            continue
        read, write = os.pipe()
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # the measured process
            os.close(read)
            code = 0
            with os.fdopen(write, "w") as pipe:

                def send(obj: dict[str, Any]) -> None:
                    pipe.write(json.dumps(obj))

                try:
                    _round(request, send)
                except BaseException as exc:  # noqa: B036 - said to the parent, then exit
                    send({"error": f"{type(exc).__name__}: {exc}"})
                    code = 1
            os._exit(code)
        os.close(write)
        with os.fdopen(read) as pipe:
            said = pipe.read()
        _, status = os.waitpid(pid, 0)
        seconds = time.perf_counter() - t0
        try:
            result = json.loads(said)
        except ValueError:
            result = {"error": f"the measured process ended ({status}) without a result"}
        reply({**result, "pid": pid, "seconds": seconds})
    return 0


if __name__ == "__main__":
    sys.exit(serve())
