"""What ponder prints through rich is text: no markup, no emoji codes, in a line or a table."""

from __future__ import annotations

from rich.table import Table

from client.consoles import text_console

TEXT = "[providers.myllm] needs a key :rocket: [bold]now[/bold]"


def test_a_line_is_printed_as_given() -> None:
    console = text_console()
    with console.capture() as captured:
        console.print(TEXT)
    assert captured.get() == TEXT + "\n"


def test_a_table_cell_is_printed_as_given() -> None:
    console = text_console(stderr=True)
    table = Table()
    table.add_column("hint")
    table.add_row(TEXT)
    with console.capture() as captured:
        console.width = 200
        console.print(table)
    assert TEXT in captured.get()
