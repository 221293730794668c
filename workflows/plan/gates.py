"""The model-gate verdict grammar and the defang that keeps upstream text from forging one.

Pure. A verdict is valid when the last non-empty line is ``GATE: PASS`` or ``GATE: FAIL``
(surrounding whitespace ignored) and it is the only line of that form in the output, so a reply
cannot carry a second verdict above its real one. Anything else is unparseable, never a pass.

Defanging is the other half: upstream text spliced into a prompt has every line that could be
read as a verdict (in any case, with markup around it) rewritten, so a step that quotes an earlier
gate's legitimate verdict cannot end its own output with it. The model still reads every word.
Both sides split lines with ``str.splitlines`` so they agree on what a line is (``\\u2028`` too).
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["Verdict", "defang", "gate_verdict"]

Verdict = Literal["pass", "fail", "invalid"]

_VERDICT = re.compile(r"GATE: (PASS|FAIL)")
# Looser than the grammar on purpose: anything a lenient reader might take for a verdict.
_LOOKS_LIKE = re.compile(r"^\W*gate\W*(pass|fail)", re.IGNORECASE)
_DEFANG_PREFIX = "(quoted) "


def gate_verdict(text: str) -> Verdict:
    lines = [line.strip() for line in text.splitlines()]
    nonempty = [line for line in lines if line]
    if not nonempty:
        return "invalid"
    matching = [line for line in nonempty if _VERDICT.fullmatch(line)]
    last = _VERDICT.fullmatch(nonempty[-1])
    if last is None or len(matching) != 1:
        return "invalid"
    return "pass" if last.group(1) == "PASS" else "fail"


def defang(text: str) -> str:
    out = []
    for line in text.splitlines(keepends=True):
        # The line break is whitespace to strip() and no part of a verdict, so the line is
        # tested as it is.
        if _LOOKS_LIKE.match(line.strip()) or _VERDICT.search(line):
            line = _DEFANG_PREFIX + line
        out.append(line)
    return "".join(out)
