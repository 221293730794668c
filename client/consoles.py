"""The one way ponder makes a rich console: what it prints is text, never markup or emoji codes.

A task, an answer, a candidate id, an error or a hint may hold ``[brackets]`` (``[providers.NAME]``
in a configuration hint) or ``:name:`` (a model's prose) that rich would otherwise read as markup
or replace with an emoji. Styles come from rich's own renderables (tables, panels), never from
the text.
"""

from __future__ import annotations

from rich.console import Console

__all__ = ["text_console"]


def text_console(*, stderr: bool = False) -> Console:
    """A console on stdout (``stderr``: on stderr) that prints every string as given."""
    return Console(stderr=stderr, markup=False, emoji=False)
