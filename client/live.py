"""The live status panel that ``plan run`` / ``watch`` and ``think`` redraw while they follow.

One home for rich's ``Live`` so every follower ends the same way: on a terminal rich ends the
last frame with a newline itself; without one (a pipe, a log file, a test) it prints the final
frame once and leaves the cursor after its last cell, so the next line (``report: PATH``,
``-- run ... completed``) would be glued to the panel's last row. Here it always starts its own
line, and a terminal gets no extra blank line.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.live import Live

__all__ = ["live_panel"]


@contextmanager
def live_panel(console: Console, **options: Any) -> Iterator[Live]:
    """A ``rich.live.Live`` on ``console``; whatever is printed after it starts a new line."""
    with Live(console=console, **options) as live:
        yield live
    if not console.is_terminal and live.renderable:  # nothing drawn: nothing to end
        console.line()
