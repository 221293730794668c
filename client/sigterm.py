"""SIGTERM through the event loop, for every command (``client.session`` opens a session in it).

A Python-level signal handler raises in whatever frame the main thread runs, which under asyncio
is often an activity of some other run (SystemExit inside call_model). The handler goes through
the event loop instead: a command that waits on a run detaches (like Ctrl-C), any other
command's main task is cancelled, so leases and workers unwind in order.

A module of its own, with no Temporal import: ``ponder mcp`` answers SIGTERM this way before it
has opened a session (``client.mcp.services``).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Iterator

__all__ = ["on_sigterm", "sigterm_through_the_loop", "terminated"]

_sigterm_actions: list[Callable[[], None]] = []
_terminated = False


def terminated() -> bool:
    """Whether SIGTERM ended this process's command."""
    return _terminated


@contextlib.contextmanager
def on_sigterm(action: Callable[[], None]) -> Iterator[None]:
    """Within the block, SIGTERM calls ``action`` (inner blocks win)."""
    _sigterm_actions.append(action)
    try:
        yield
    finally:
        _sigterm_actions.remove(action)


def _handle_sigterm() -> None:
    global _terminated
    _terminated = True
    if _sigterm_actions:
        _sigterm_actions[-1]()


@contextlib.contextmanager
def sigterm_through_the_loop() -> Iterator[None]:
    """Within the block, SIGTERM cancels the current task (unless an inner ``on_sigterm`` says
    otherwise)."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()

    def cancel() -> None:
        if task is not None:
            task.cancel()

    loop.add_signal_handler(signal.SIGTERM, _handle_sigterm)
    try:
        with on_sigterm(cancel):
            yield
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
