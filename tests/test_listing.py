"""`nqprof strategies` fits in 100 columns, with every strategy and parameter on it."""

from nqprof.cli import main
from nqprof.strategies import all_strategies


def test_strategies_listing_fits_in_100_columns(capsys):
    assert main(["strategies"]) == 0
    out = capsys.readouterr().out
    wide = [line for line in out.splitlines() if len(line) > 100]
    assert not wide, f"{len(wide)} lines over 100 columns, e.g. {wide[0]!r}"
    lines = out.splitlines()
    for s in all_strategies():
        assert any(line.startswith(s.name + " ") for line in lines), s.name
        for p in s.params:
            assert any(line.split()[:1] == [p.name] for line in lines), (s.name, p.name)


def test_parameter_texts_are_one_line_each():
    for s in all_strategies():
        assert "\n" not in s.title
        for p in s.params:
            for text in (p.help, p.describe_range(), p.describe_default()):
                assert "\n" not in text, (s.name, p.name, text)


def test_parameter_columns_line_up(capsys):
    """Every parameter row starts its name, range, default and help at the same columns as
    every other, whatever the longest name (blocks_per_sm is longer than the rest)."""
    assert main(["strategies"]) == 0
    by_name = {s.name: s for s in all_strategies()}
    starts, rows, params = set(), 0, iter(())
    for line in capsys.readouterr().out.splitlines():
        if not line.startswith(" "):
            params = iter(by_name[line.split()[0]].params)
            continue
        if line.lstrip().startswith("N >= "):
            continue
        p = next(params)
        name = line.index(p.name + " ")
        rng = line.index(" " + p.describe_range() + " ", name + len(p.name)) + 1
        default = line.index(" default " + p.describe_default() + " ", rng) + 1
        help_at = line.rindex("  " + p.help) + 2
        assert line.endswith(p.help), line
        starts.add((name, rng, default, help_at))
        rows += 1
    assert rows == sum(len(s.params) for s in all_strategies())
    assert len(starts) == 1, sorted(starts)
