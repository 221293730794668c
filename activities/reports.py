"""HTML reports from Jinja2 templates: autoescape on, every page extends ``templates/base.html``.

The base layout gives each report the same head, style sheet and header (a heading and a list of
facts); a report template fills ``{% block content %}``. Plan and campaign reports add their own
template next to ``tournament.html`` and ``ask.html``. Text from models is untrusted: autoescape
escapes every value, and only ``Markup`` built by our own SVG helpers passes through as is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from jinja2 import (
    BytecodeCache,
    Environment,
    FileSystemBytecodeCache,
    PackageLoader,
    StrictUndefined,
    select_autoescape,
)

__all__ = ["PREVIEW_CHARS", "compiled_templates", "render_page"]

PREVIEW_CHARS = 4_000
"""Long text a report shows (a plan step's output, a campaign scenario's task) is cut here; the
run directory's data file holds it whole."""


def compiled_templates() -> BytecodeCache | None:
    """Jinja's cache of compiled templates (a directory of this user's, mode 0700, under the
    temporary directory; keyed by each template's source, so an edited one compiles again).
    Compiling the templates costs a report about a fifth of a second, which ``ponder report``
    pays once. None where no safe directory can be had: each render compiles then."""
    try:
        return FileSystemBytecodeCache()
    except (OSError, RuntimeError):
        return None


_ENV = Environment(
    loader=PackageLoader("activities", "templates"),
    bytecode_cache=compiled_templates(),
    autoescape=select_autoescape(default=True, default_for_string=True),
    undefined=StrictUndefined,  # a missing value is a bug, not an empty cell
    trim_blocks=True,
    lstrip_blocks=True,
)


def render_page(
    template: str,
    *,
    title: str,
    heading: str,
    facts: Sequence[tuple[str, str]],
    fact_ids: Mapping[str, str] | None = None,
    simulated: bool = False,
    **context: Any,
) -> str:
    """One whole page: ``template`` (which extends the base layout) over ``context``."""
    page = _ENV.get_template(template).render(
        title=title,
        heading=heading,
        facts=list(facts),
        fact_ids=dict(fact_ids or {}),
        simulated=simulated,
        **context,
    )
    return page.rstrip("\n") + "\n"
