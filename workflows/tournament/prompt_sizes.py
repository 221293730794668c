"""The worst-case size of every tournament prompt, known from the input before any call. Pure.

A template may name a variable any number of times, so a small input can ask for a huge prompt:
ten thousand ``{task}`` over a 10,000-character task is 100 million characters, built in the
workflow's own thread at every call. A role's worst case is its two templates' literal text
plus, for each use of a variable, that variable's bound: the task and the rubric as given, a
candidate at the most one model call may return (``MAX_RESPONSE_BYTES``; the longest given
candidate when the caller supplies them), a critique at ``critique_chars``. A role whose worst
case passes ``PROMPT_CEILING_CHARS`` is refused when the input decodes.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from workflows.bounds import MAX_RESPONSE_BYTES
from workflows.tournament.critique import FALLBACK_CRITIQUE
from workflows.tournament.prompts import (
    ROLE_VARIABLES,
    PromptOverrides,
    Role,
    Style,
    builtin_template,
    template_pieces,
)

__all__ = [
    "PROMPT_CEILING_CHARS",
    "RoleSize",
    "prompt_size_problem",
    "role_size",
    "variable_bounds",
    "worst_case_chars",
]

PROMPT_CEILING_CHARS = 4 * MAX_RESPONSE_BYTES
"""4,194,304 characters per prompt (system and user together), worst case. Not a plan's
1,000,000 (which a plan checks on the prompt it actually sends): this bound holds before any
candidate exists, and the built-in judge prompt alone holds two of them, each up to a whole
response (1 MiB). That leaves about 2 MiB for the task, the rubric and the template, which is
already past every model's context window."""

_FIX = {
    "task": "shorten the task",
    "rubric": "shorten the rubric",
    "candidate": "shorten the given candidates",
    "candidateA": "shorten the given candidates",
    "candidateB": "shorten the given candidates",
    "critique": "lower critique_chars",
}
_FIELD = {"candidateA": "candidates", "candidateB": "candidates", "candidate": "candidates"}


def variable_bounds(
    *, task: str, rubric: str, given: Iterable[str] | None, critique_chars: int
) -> dict[str, int]:
    """The longest value each template variable can take in a run of this input."""
    if given is None:
        candidate = MAX_RESPONSE_BYTES
    else:
        candidate = max((len(text) for text in given), default=0)
    return {
        "task": len(task),
        "rubric": len(rubric),
        "candidate": candidate,
        "candidateA": candidate,
        "candidateB": candidate,
        "critique": max(critique_chars, len(FALLBACK_CRITIQUE)),
    }


def worst_case_chars(template: str, bounds: Mapping[str, int]) -> int:
    """Characters ``template`` renders to at most when every variable is at its bound. A name
    without a bound stays as written (``substitute`` refuses it before any call)."""
    pieces = template_pieces(template)
    size = sum(len(text) for text in pieces[0::2])
    return size + sum(bounds.get(name, len(name) + 2) for name in pieces[1::2])


@dataclass(frozen=True)
class RoleSize:
    """One role's worst case: its system and user prompt, and which fields they come from."""

    role: Role
    system: int
    user: int
    field: str
    """The input field to fix: ``prompts.<role>.<system|user>`` for an override, else the
    variable whose uses weigh most (``task``, ``rubric``, ``candidates``, ``critique_chars``)."""
    heaviest: str
    """That heaviest variable's name."""
    uses: int
    """How many times the heavier template names it."""

    @property
    def total(self) -> int:
        return self.system + self.user


def role_size(
    role: Role,
    bounds: Mapping[str, int],
    *,
    style: Style = "general",
    overrides: PromptOverrides | None = None,
) -> RoleSize:
    """``role``'s worst-case prompt with ``overrides`` (None: the built-in templates)."""
    base = builtin_template(role, style)
    override = getattr(overrides, role) if overrides is not None else None
    texts = {"system": base.system, "user": base.user}
    overridden = set()
    for part in texts:
        text = getattr(override, part) if override is not None else None
        if text is not None:
            texts[part] = text
            overridden.add(part)
    sizes = {part: worst_case_chars(text, bounds) for part, text in texts.items()}
    heavier = max(sizes, key=lambda part: sizes[part])
    names = template_pieces(texts[heavier])[1::2]
    weight = {name: names.count(name) * bounds.get(name, 0) for name in set(names)}
    heaviest = max(sorted(weight), key=lambda name: weight[name], default="task")
    if heavier in overridden:
        field = f"prompts.{role}.{heavier}"
    elif heaviest == "critique":
        field = "critique_chars"
    else:
        field = _FIELD.get(heaviest, heaviest)
    return RoleSize(role, sizes["system"], sizes["user"], field, heaviest, names.count(heaviest))


def prompt_size_problem(
    bounds: Mapping[str, int],
    *,
    style: Style = "general",
    overrides: PromptOverrides | None = None,
    roles: Collection[Role] = tuple(ROLE_VARIABLES),
    ceiling: int = PROMPT_CEILING_CHARS,
) -> str | None:
    """What refuses the first of ``roles`` whose worst case passes ``ceiling``, or None."""
    for role in roles:
        size = role_size(role, bounds, style=style, overrides=overrides)
        if size.total <= ceiling:
            continue
        name = size.heaviest
        times = "once" if size.uses == 1 else f"{size.uses:,} times"
        fix = _FIX.get(name, "use fewer variables")
        if size.field.startswith("prompts."):
            fix = f"name each {{variable}} fewer times in {size.field}, or {fix}"
        return (
            f"{size.field}: the {role} prompt can render up to {size.total:,} characters "
            f"({{{name}}} {times}, at up to {bounds.get(name, 0):,} characters each), over "
            f"the ceiling of {ceiling:,} characters per prompt: {fix}"
        )
    return None
