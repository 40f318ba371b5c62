"""The papers nqprof reproduces, one module each: the paper's published figures as data,
the measurement that re-runs them with nqprof, and the tables and figures that set ours
beside theirs. `nqprof report` (nqprof.cli.report) lists and runs their artefacts.

A paper module defines ``PAPER``, a :class:`Paper` whose artefacts name what can be
reproduced; an artefact whose command is not written yet is listed as planned.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Artefact:
    """One table or figure of a paper: its name on the command line and what it shows."""

    name: str
    title: str
    #: Needs a GPU to measure (a CPU-only machine gets a one-line error).
    gpu: bool = True
    #: For an artefact not reproduced yet: what it waits for.
    planned: str = ""


@dataclass(frozen=True)
class Paper:
    key: str
    citation: str
    artefacts: tuple[Artefact, ...]

    def artefact(self, name: str) -> Artefact:
        for a in self.artefacts:
            if a.name == name:
                return a
        raise KeyError(name)


#: The papers, in the order `nqprof report` lists them (modules of this package).
PAPERS = ("feinbube", "plauth", "carneiro", "wang", "kerbl")


def paper(key: str) -> Paper:
    return importlib.import_module(f"{__name__}.{key}").PAPER


def all_papers() -> list[Paper]:
    return [paper(key) for key in PAPERS]
