"""What an expression's text must pass before any parser sees it, in time linear in its length.

cel-python's grammar lexes string literals with regexes whose alternatives overlap (an escape
such as ``\\a`` matches both the escape branch and two single characters), so Python's
backtracking ``re`` takes time exponential in the number of escapes on a literal that never
closes: 32 escapes froze a worker for minutes. Two things keep expression text away from that:

- ``linear_grammar`` rewrites those three terminals with branches that cannot overlap (a
  backslash always pairs with the next character), so a failed match costs one pass. On every
  literal that closes, the rewritten and the original terminals end at the same quote: the
  original's first, escape-preferring path is exactly "a backslash and the next character are
  one unit", and that path closes at the first quote outside such a unit, as the rewrite does.
  A text the rewrite refuses (an unterminated literal) never reaches cel-python's own parser,
  which the evaluator uses, because the evaluator checks every text with this grammar first.
- ``lexical_problem`` walks the text once, before parsing, and refuses what would otherwise
  cost the parser most: a string literal that does not close, brackets nested deeper than the
  expression's depth bound, and runs of unary operators longer than it. All three would be
  refused after parsing too; refusing them first bounds the parse of any accepted text.

Pure: no Temporal import, no I/O.
"""

from __future__ import annotations

__all__ = ["lexical_problem", "linear_grammar"]

# cel-python 0.4's terminals, verbatim: if an upgrade changes them, the rewrite must be checked
# again, so a mismatch fails loudly instead of silently keeping the backtracking ones.
_ESCAPES_DQ = r"""\\[abfnrtv"'\\]|\\\d{3}|\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4-8}"""
_ESCAPES_SQ = r"""\\[abfnrtv"'\\]|\\\d{3}|\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\U[0-9a-fA-F]{8}"""
_ORIGINAL = {
    "STRING_LIT": (
        f'STRING_LIT     : /[rR]?"(?:{_ESCAPES_DQ}|.)*?"/\n'
        f"               | /[rR]?'(?:{_ESCAPES_SQ}|.)*?'/\n"
    ),
    "MLSTRING_LIT": (
        f'MLSTRING_LIT   : /[rR]?"""(?:{_ESCAPES_DQ}|\\r\\n|\\r|\\n|.)*?"""/\n'
        f"               | /[rR]?'''(?:{_ESCAPES_SQ}|\\r\\n|\\r|\\n|.)*?'''/\n"
    ),
}
# The body of each: an escaped pair, a character that is neither backslash nor the quote (nor a
# line break, for one-line literals), or (triple-quoted) a quote that does not start the closer.
_LINEAR = {
    "STRING_LIT": (
        'STRING_LIT     : /[rR]?"(?:\\\\[^\\n]|[^"\\\\\\n])*"/\n'
        "               | /[rR]?'(?:\\\\[^\\n]|[^'\\\\\\n])*'/\n"
    ),
    "MLSTRING_LIT": (
        'MLSTRING_LIT   : /[rR]?"""(?:\\\\[\\s\\S]|[^"\\\\]|"(?!""))*"""/\n'
        "               | /[rR]?'''(?:\\\\[\\s\\S]|[^'\\\\]|'(?!''))*'''/\n"
    ),
}


def linear_grammar(grammar: str) -> str:
    """cel-python's grammar with its string terminals rewritten to lex in linear time."""
    for name, original in _ORIGINAL.items():
        if grammar.count(original) != 1:
            raise RuntimeError(
                f"cel-python's {name} terminal is not the one ponder rewrites; check the "
                "rewrite in workflows/plan/expression_lexing.py against the new grammar"
            )
        grammar = grammar.replace(original, _LINEAR[name])
    return grammar


_OPEN = "([{"
_CLOSE = ")]}"
_SPACE = " \t\n\r\f"


def _literal_end(text: str, start: int) -> int:
    """Where the string literal whose quote is at ``start`` ends (just past its closing
    quote), or -1 when it never closes."""
    quote = text[start]
    triple = text.startswith(quote * 3, start)
    closer = quote * 3 if triple else quote
    i = start + len(closer)
    end = len(text)
    while i < end:
        char = text[i]
        if char == "\\":
            i += 2
        elif text.startswith(closer, i):
            return i + len(closer)
        elif char == "\n" and not triple:
            return -1
        else:
            i += 1
    return -1


def lexical_problem(text: str, max_depth: int) -> tuple[str, str] | None:
    """(code, message) for what refuses ``text`` before parsing, or None.

    One pass: string literals and comments are skipped as the lexer would, brackets are
    counted, and so are runs of the unary operators ``-`` and ``!``."""
    depth = 0
    unary_run = 0
    i = 0
    end = len(text)
    while i < end:
        char = text[i]
        if char in "\"'":
            close = _literal_end(text, i)
            if close < 0:
                return (
                    "expr.syntax",
                    f"the string literal at column {i + 1} is not closed; fix: end it with "
                    "its opening quote (a backslash escapes the character after it)",
                )
            i = close
            unary_run = 0
            continue
        if text.startswith("//", i):
            newline = text.find("\n", i)
            i = end if newline < 0 else newline + 1
            continue
        if char in _SPACE:
            i += 1
            continue
        if char in "-!" and not text.startswith("!=", i):
            unary_run += 1
            if unary_run > max_depth:
                return (
                    "expr.too_complex",
                    f"{unary_run} unary operators in a row at column {i + 1}, over "
                    f"{max_depth}; fix: simplify it",
                )
        else:
            unary_run = 0
        if char in _OPEN:
            depth += 1
            if depth > max_depth:
                return (
                    "expr.too_complex",
                    f"brackets nest more than {max_depth} deep at column {i + 1}; "
                    "fix: flatten it, or compute parts in a set step",
                )
        elif char in _CLOSE:
            depth = max(depth - 1, 0)
        i += 1
    return None
