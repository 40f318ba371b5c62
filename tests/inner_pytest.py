"""An inner pytest session (pytester) with nqprof's plugin: the suite it runs and the options
every such session starts with."""

from pathlib import Path

#: A suite of one test that runs the nqbench fixture's case.
ONE_CASE = "def test_nq(nqbench):\n    assert nqbench.run().verified\n"
#: The project's benchmark suite, bench/test_nqueens.py.
BENCH_SUITE = (Path(__file__).resolve().parents[1] / "bench" / "test_nqueens.py").read_text()


def plugin_args(request) -> list[str]:
    """nqprof's plugin loaded (unless this session has it already) and no cache."""
    load = [] if request.config.pluginmanager.has_plugin("nqprof") else ["-p", "nqprof.plugin"]
    return [*load, "-p", "no:cacheprovider"]


def inner_pytest(pytester, request, *first, suite=ONE_CASE, name="test_suite"):
    """Write ``suite`` as ``name``.py and return a function that runs pytest over it in this
    process with the options ``first`` and then its own (hypothesis' plugin left out)."""
    pytester.makepyfile(**{name: suite})
    start = [*plugin_args(request), "-p", "no:hypothesispytest", *first]

    def run(*args):
        return pytester.runpytest(*start, *args)

    return run
