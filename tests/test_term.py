"""The command's terminal helpers: tables and the progress bar keep to the terminal's width."""

from __future__ import annotations

import io

import pytest

from toolfilter_fast.cli.term import ProgressBar, Style, table, terminal_width, text_width

PLAIN = Style(False)
WHY = ('exclude[0] "*/delete_*" matches (loose: server "github", name "delete_repo"), '
       "and a reason long enough to need three lines at forty columns")


def cells(*texts):
    return [(t, ()) for t in texts]


def test_a_table_that_fits_is_left_as_it_was():
    lines = table(["STATUS", "TOOL", "WHY"], [cells("hidden", "github/x", "short")], PLAIN,
                  width=200)
    assert lines == ["STATUS  TOOL      WHY", "hidden  github/x  short"]


@pytest.mark.parametrize("width", [40, 60, 79, 100])
def test_rows_wider_than_the_terminal_wrap_inside_their_column(width):
    rows = [cells("hidden", "github/Delete-Repo", WHY), cells("visible", "fs/read_file", "ok")]
    lines = table(["STATUS", "TOOL", "WHY"], rows, PLAIN, width=width)
    assert max(map(text_width, lines)) <= width
    assert len(lines) > 3  # the long reason took more than one line
    # Every character of the reason is still there, in order, in the third column.
    column = lines[0].index("WHY")
    assert "".join(line[column:] for line in lines[1:-1]).replace(" ", "") == WHY.replace(" ", "")
    # The continuation lines leave the first column blank.
    assert all(not line[:8].strip() for line in lines[2:-1])


def test_narrow_columns_and_wide_characters_stay_inside_the_width():
    name = "名前" * 30 + "_tool_with_no_spaces_at_all" * 3
    lines = table(["A", "B"], [cells("x", name)], PLAIN, width=30)
    assert max(map(text_width, lines)) <= 30
    assert "".join(line[3:] for line in lines[1:]) == name  # cut, never lost


def test_the_widest_column_gives_way_first():
    lines = table(["A", "B"], [cells("a" * 20, "b" * 60)], PLAIN, width=50)
    assert lines[1].startswith("a" * 20 + "  " + "b" * 28)


def test_styles_survive_wrapping_and_padding_is_outside_them():
    lines = table(["S", "WHY"], [[("hidden", ("red",)), (WHY, ("dim",))]], Style(True),
                  width=40)
    assert lines[1].startswith("\x1b[31mhidden\x1b[0m  \x1b[2m")
    assert all(line.endswith("\x1b[0m") for line in lines[1:])


def test_terminal_width_reads_columns_and_ignores_a_pipe(monkeypatch):
    monkeypatch.setenv("COLUMNS", "57")
    assert terminal_width(io.StringIO()) == 57
    monkeypatch.delenv("COLUMNS")
    assert terminal_width(io.StringIO()) is None  # not a terminal: no limit


def test_the_progress_bar_line_never_reaches_the_edge(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setenv("COLUMNS", "50")
    out = Tty()
    bar = ProgressBar(out, 10, "bench", True)
    bar.advance(5, "a message far too long to fit in fifty columns of terminal")
    bar.close()
    drawn = [part.removesuffix("\x1b[K") for part in out.getvalue().strip().split("\r") if part]
    assert drawn and all(text_width(line) <= 49 for line in drawn)
