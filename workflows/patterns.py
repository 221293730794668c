"""Regular expressions that come from input: the one rule, RE2 (linear time) with a bounded program.

Pure (``google-re2`` only: no Temporal, no I/O), so a document validator, a workflow's input
decoding, an update validator and an activity all apply the same rule. A pattern from input (a
campaign's regex scorer and ``re:`` route rules, a plan pause schema's ``pattern`` and
``patternProperties``) is compiled here or refused: Python's backtracking ``re`` never sees one,
so ``(a|a)*$`` cannot hold the GIL for minutes. RE2 has no backreferences and no lookaround; a
pattern that uses them is refused with RE2's reason, as is one that does not compile.

Bounds: a pattern is at most :data:`MAX_PATTERN_CHARS` characters and RE2 compiles it into at most
:data:`MAX_PROGRAM_BYTES` of memory (its ``max_mem``: ``(\\pL{100}){10}`` is refused as too large);
matching is linear in the text, so its cost is bounded by the text's own ceiling.
"""

from __future__ import annotations

import functools

import re2

__all__ = [
    "MAX_PATTERN_CHARS",
    "MAX_PROGRAM_BYTES",
    "PatternInvalid",
    "compile_pattern",
    "pattern_problem",
    "search",
]

MAX_PATTERN_CHARS = 1_000
MAX_PROGRAM_BYTES = 1 << 20
"""RE2's ``max_mem``: the compiled program and its DFA cache together (RE2's default is 8 MiB)."""


class PatternInvalid(ValueError):
    """A pattern RE2 refuses, or one over the bounds; the message says why and what to do."""


def _options() -> re2.Options:
    options = re2.Options()
    options.max_mem = MAX_PROGRAM_BYTES
    # A refusal is reported to the caller, not to the worker's stderr. (The setter reads None
    # as False: that mutant is the same program.)
    options.log_errors = False  # pragma: no mutate
    return options


@functools.lru_cache(maxsize=512)
def compile_pattern(pattern: str) -> re2._Regexp:
    """``pattern`` compiled by RE2 (cached by text: deterministic, so fine in workflow code), or
    :class:`PatternInvalid` naming the rule it breaks."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternInvalid(
            f"the pattern is {len(pattern)} characters, over the {MAX_PATTERN_CHARS} limit; "
            "fix: write a shorter pattern"
        )
    try:
        return re2.compile(pattern, _options())
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode(errors="replace")
        raise PatternInvalid(
            f"the pattern does not compile with RE2 ({reason}); fix: correct it (RE2 is "
            "linear-time: no backreferences, no lookahead or lookbehind)"
        ) from None


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` is refused, or None when it compiles."""
    try:
        compile_pattern(pattern)
    except PatternInvalid as exc:
        return str(exc)
    return None


def search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches anywhere in ``text`` (``re.search`` semantics, linear time)."""
    return compile_pattern(pattern).search(text) is not None
