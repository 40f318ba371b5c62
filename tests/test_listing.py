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
