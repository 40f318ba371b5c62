"""nqprof: benchmark and profile GPU work distribution on N-Queens.

The public entry points are :func:`nqprof.runner.solve` (one verified run, as a
:class:`nqprof.result.RunRecord`), the ``nqprof`` command and the pytest plugin.
"""

__version__ = "0.1.0"
