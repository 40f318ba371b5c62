"""A short round's sessions held together in one worker, its rounds taken in turn.

A round of a few microseconds takes a different time at each place in device memory its
session's allocations land: its buffers, its module's code and, for devgraph, its uploaded
graphs. Every round of one session keeps its level, and a session's level is a draw: one
devgraph session whose graphs were made eight times over ran at a level by which set its
rounds launched, spread as widely as whole worker processes (docs/results/rotation-h200).
With one session a worker, each unit of a run is one draw, two units a run estimate their
spread from two degrees of freedom, and both compare's floor and pytest-benchmark's median
move with the draws.

So a worker whose first round is short opens ``sessions`` sessions of its case, each its
own draw of where it lands, and takes its rounds in turn over them: the worker's median is
then a median over as many draws, and moves less from worker to worker and run to run.
Each round says which session ran it (:attr:`Measurement.unit`, the record's
``round_session``). The worker, not the session, stays the run's unit: its sessions share
its context, and on an H200 the workers' medians of most strategies differed by more than
their sessions' spread alone explains (docs/results/rotation-h200). Every session's first
round is run once untimed and its count checked against the first session's; the record
keeps every session's layout pad and sums their stream holds."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..errors import CountMismatchError
from ..numeric import Integer
from ..result import Measurement

#: Sessions a worker holds for a short round where $NQPROF_ROTATE does not say otherwise.
SESSIONS = 8
#: The variable that sets them (1: one session a worker, as before).
VARIABLE = "NQPROF_ROTATE"
#: The most sessions a worker may hold.
MOST = 16
#: A round longer than this (seconds, the first session's first round) is not rotated (nor
#: placed: :mod:`nqprof.strategies.placement` keeps a shorter limit of its own): where its
#: allocations land moves it by a few microseconds at most, below any floor of a round this
#: long, while the sessions' opening and untimed first rounds would cost a suite seconds.
LONGEST_ROUND_S = 1e-3
#: A board larger than this is neither rotated nor placed, nor timed once at its opening to
#: find out: where a buffer lands moves a round by a fraction of a microsecond, far below
#: the floor of a round this long, while the round that decides would cost a session
#: seconds at N=20 (docs/results/verdicts-h200).
LARGEST_N = 16


#: What $NQPROF_ROTATE may say, in nqprof's number grammar.
SESSIONS_NUMBER = Integer(
    1, MOST, f"{VARIABLE} (the sessions a GPU worker takes a short round's rounds in turn over)"
)


def sessions_wanted() -> int:
    """$NQPROF_ROTATE, else SESSIONS: InputError for anything but an integer from 1 to
    MOST."""
    text = os.environ.get(VARIABLE, "").strip()
    return SESSIONS_NUMBER(text) if text else SESSIONS


def worth(rounds: int | None, workers: int, sessions: int | None = None) -> bool:
    """Whether a run of ``rounds`` timed rounds (None: the auto rule, which takes many) over
    ``workers`` worker processes one after another gives each of a worker's sessions two
    rounds at the least: a run of a few rounds (``nqprof solve -r 3``) opens one session a
    worker, as the rounds could not go round the others."""
    k = sessions_wanted() if sessions is None else sessions
    return k > 1 and (rounds is None or rounds >= 2 * k * max(1, workers))


class Rotation:
    """The sessions of one case in one worker (``open_one`` opens one), its rounds in turn.

    The first round runs on the first session alone; if ``n`` is at most LARGEST_N and it
    took at most ``longest`` seconds, ``sessions - 1`` more are opened, each run once
    (untimed, its count checked), and from the next round on the rounds go to each in
    turn. A session that fails to open (the device's memory) ends the opening: the rounds
    go to those open, and the record's notes say why. Sessions are closed last opened
    first."""

    def __init__(
        self,
        open_one: Callable[[], Any],
        n: int,
        sessions: int | None = None,
        longest: float = LONGEST_ROUND_S,
    ):
        self.open_one, self.n = open_one, n
        self.wanted = sessions_wanted() if sessions is None else sessions
        self.longest = longest
        self.sessions = [open_one()]
        #: why no further session opened, where one failed to (the rounds go on over those open)
        self.stopped: str | None = None
        self._decided = False
        self._next = 0

    def _grow(self, first: Measurement) -> None:
        """Open the other sessions where the first round was short enough."""
        self._decided = True
        if self.wanted < 2 or self.n > LARGEST_N or first.compute_s > self.longest:
            return
        for _ in range(self.wanted - 1):
            try:
                session = self.open_one()
            except Exception as exc:  # the device's memory, a limit: go on with those open
                self.stopped = f"{type(exc).__name__}: {exc}"
                return
            self.sessions.append(session)
            m = session.run_once()  # its first round: lazy loading, first launches
            if m.count != first.count:
                raise CountMismatchError(
                    f"session {len(self.sessions)} of N={self.n} counted {m.count}, "
                    f"the first {first.count}"
                )

    def _turn(self, call: Callable[[Any], Measurement]) -> Measurement:
        if not self._decided:
            m = call(self.sessions[0])
            self._grow(m)
            return m
        i = self._next
        self._next = (i + 1) % len(self.sessions)
        m = call(self.sessions[i])
        m.unit = i
        return m

    def run_once(self) -> Measurement:
        return self._turn(lambda s: s.run_once())

    def run_round(self) -> Measurement:
        return self._turn(lambda s: s.run_round())

    def info(self) -> dict[str, Any]:
        """The first session's info; with more than one, every session's layout pad, how
        many sessions took the rounds, and the stream holds of all."""
        info = self.sessions[0].info()
        if len(self.sessions) > 1:
            infos = [info] + [s.info() for s in self.sessions[1:]]
            placement = dict(info.get("placement") or {})
            placement["sessions"] = len(self.sessions)
            placement["pads_mib"] = [(i.get("placement") or {}).get("pad_mib") for i in infos]
            info["placement"] = placement
            if info.get("holds") is not None:
                info["holds"] = {
                    key: sum((i.get("holds") or {}).get(key, 0) for i in infos)
                    for key in info["holds"]
                }
            info.setdefault("notes", []).append(
                f"rounds taken in turn over {len(self.sessions)} sessions in this worker, "
                "each where its own allocations landed (nqprof.strategies.rotation)"
            )
        if self.stopped:
            info.setdefault("notes", []).append(
                f"rounds taken in turn over {len(self.sessions)} of {self.wanted} sessions: "
                f"the next failed to open ({self.stopped})"
            )
        return info

    def close(self) -> None:
        error = None
        for session in reversed(self.sessions):
            try:
                session.close()
            except BaseException as exc:  # close them all; the first failure is raised
                error = error or exc
        self.sessions = []
        if error is not None:
            raise error

    def __getattr__(self, name: str) -> Any:
        """Anything else a session offers (a strategy's own calls): the first session's."""
        if name.startswith("_") or name in ("sessions", "open_one"):
            raise AttributeError(name)
        return getattr(self.sessions[0], name)
