"""Prompts of the four tournament roles, in two styles, with validated per-role overrides.

Roles and their variables: generate ``{task, rubric}``, compare ``{task, rubric, candidateA,
candidateB}``, mutate ``{task, rubric, candidate, critique}``, finalize ``{task, rubric,
candidate}``. Substitution is one pass: ``{name}`` becomes its value, ``{{`` and ``}}`` are
literal braces, any other brace is literal text, and a substituted value is never expanded again
(a candidate may well contain ``{task}``). ``str.format`` is never used: it would re-read braces in
JSON examples and C++ code. Presentation labels are "Solution A" / "Solution B" in every style,
the names the critique rewriter turns into "your solution" / "the other solution". A template
may name a variable any number of times, so every role's worst-case size is bounded when the
input decodes (``prompt_sizes``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from pydantic import BaseModel, ConfigDict

from workflows.tournament.errors import (
    PROFILE_INVALID,
    PROMPTS_UNKNOWN_VARIABLE,
    TournamentError,
)

__all__ = [
    "CODE_RUBRICS",
    "DEFAULT_RUBRIC",
    "OUTPUT_TOKEN_CAPS",
    "ROLE_VARIABLES",
    "PromptOverride",
    "PromptOverrides",
    "PromptTemplate",
    "RenderedPrompt",
    "Role",
    "Style",
    "builtin_template",
    "render",
    "substitute",
    "template_pieces",
    "template_variables",
    "validate_output_caps",
    "validate_overrides",
]

Role = Literal["generate", "compare", "mutate", "finalize"]
Style = Literal["general", "paper-programming"]

DEFAULT_RUBRIC = (
    "Prefer answers that are correct, complete, robust, verifiable, and directly aligned with the "
    "task."
)

ROLE_VARIABLES: Mapping[Role, frozenset[str]] = MappingProxyType(
    {
        "generate": frozenset({"task", "rubric"}),
        "compare": frozenset({"task", "rubric", "candidateA", "candidateB"}),
        "mutate": frozenset({"task", "rubric", "candidate", "critique"}),
        "finalize": frozenset({"task", "rubric", "candidate"}),
    }
)

# Output token caps sent with every call; "compare" is the judge.
OUTPUT_TOKEN_CAPS: Mapping[Role, int] = MappingProxyType(
    {"generate": 4096, "compare": 1024, "mutate": 4096, "finalize": 4096}
)

_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


class PromptTemplate(BaseModel):
    model_config = ConfigDict(frozen=True)

    system: str
    user: str


class PromptOverride(BaseModel):
    """Replace a role's system and/or user template; None keeps the built-in one."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, strict=True)

    system: str | None = None
    user: str | None = None


class PromptOverrides(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, strict=True)

    generate: PromptOverride | None = None
    compare: PromptOverride | None = None
    mutate: PromptOverride | None = None
    finalize: PromptOverride | None = None


@dataclass(frozen=True, slots=True)
class RenderedPrompt:
    role: Role
    system: str
    user: str
    max_output_tokens: int

    def stored(self) -> dict[str, str]:
        """What ``include_prompts`` keeps of this prompt."""
        return {"role": self.role, "system": self.system, "user": self.user}

    @property
    def sha256(self) -> str:
        """Content address of the stored form (the same prompt is kept once)."""
        text = json.dumps(self.stored(), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()


def template_variables(template: str) -> list[str]:
    """The ``{variables}`` a template names, in order of first use."""
    return list(dict.fromkeys(_pieces(template)[1::2]))


def template_pieces(template: str) -> tuple[str, ...]:
    """Literal text (even places) and variable names (odd places) of ``template``, as
    ``substitute`` fills it."""
    return _pieces(template)


@functools.lru_cache(maxsize=256)
def _pieces(template: str) -> tuple[str, ...]:
    """``template`` split once into literal text (even places, ``{{``/``}}`` already undone)
    and variable names (odd places): every call of a run fills the same few templates, so
    filling is a join, not a regex pass (cached by text: deterministic, fine in workflows)."""
    pieces: list[str] = []
    literal: list[str] = []
    end = 0
    for match in _TOKEN.finditer(template):
        literal.append(template[end : match.start()])
        end = match.end()
        if match[1] is None:  # ``{{`` or ``}}``
            literal.append(match[0][0])
            continue
        pieces += ["".join(literal), match[1]]
        literal = []
    literal.append(template[end:])
    pieces.append("".join(literal))
    return tuple(pieces)


def _check(template: str, role: Role, where: str) -> None:
    allowed = ROLE_VARIABLES[role]
    unknown = [name for name in template_variables(template) if name not in allowed]
    if unknown:
        names = ", ".join(f"{{{v}}}" for v in sorted(allowed))
        raise TournamentError(
            PROMPTS_UNKNOWN_VARIABLE,
            f"prompt {where} names {{{unknown[0]}}}, which the {role} role does not have: "
            f"use one of {names}, or write {{{{ and }}}} for literal braces",
        )


def substitute(template: str, values: Mapping[str, str], *, role: Role, where: str = "") -> str:
    """Fill ``template`` in one pass; an unknown ``{variable}`` is ``prompts.unknown_variable``."""
    _check(template, role, where or role)
    missing = ROLE_VARIABLES[role] - values.keys()
    if missing:
        raise ValueError(f"values for the {role} role lack {sorted(missing)}")
    pieces = _pieces(template)
    filled = list(pieces)
    for i in range(1, len(pieces), 2):
        filled[i] = values[pieces[i]]
    return "".join(filled)


def validate_overrides(overrides: PromptOverrides | None) -> None:
    """Refuse, before any call, an override naming a variable its role does not have."""
    if overrides is None:
        return
    for role in ROLE_VARIABLES:
        override: PromptOverride | None = getattr(overrides, role)
        if override is None:
            continue
        for field in ("system", "user"):
            text = getattr(override, field)
            if text is not None:
                _check(text, role, f"override {role}.{field}")


def validate_output_caps(caps: Mapping[str, int]) -> None:
    """Refuse per-role output caps for an unknown role or below one token."""
    for role, cap in caps.items():
        if role not in OUTPUT_TOKEN_CAPS:
            raise TournamentError(
                PROFILE_INVALID,
                f"output_token_caps names role {role!r}: use one of {', '.join(OUTPUT_TOKEN_CAPS)}",
            )
        if cap < 1:
            raise TournamentError(
                PROFILE_INVALID, f"output_token_caps.{role}={cap} must be >= 1 token"
            )


def builtin_template(role: Role, style: Style = "general") -> PromptTemplate:
    try:
        return _TEMPLATES[style][role]
    except KeyError:
        raise ValueError(
            f"no built-in prompt for role {role!r} in style {style!r}: roles are "
            f"{', '.join(ROLE_VARIABLES)}; styles are {', '.join(_TEMPLATES)}"
        ) from None


def render(
    role: Role,
    values: Mapping[str, str],
    *,
    style: Style = "general",
    override: PromptOverride | None = None,
    caps: Mapping[str, int] | None = None,
) -> RenderedPrompt:
    """The system and user prompt of one call, with the role's output token cap.

    ``caps`` overrides the built-in cap of a role it names.
    """
    base = builtin_template(role, style)
    system = override.system if override and override.system is not None else base.system
    user = override.user if override and override.user is not None else base.user
    return RenderedPrompt(
        role=role,
        system=substitute(system, values, role=role, where=f"{role}.system"),
        user=substitute(user, values, role=role, where=f"{role}.user"),
        max_output_tokens=(caps or {}).get(role, OUTPUT_TOKEN_CAPS[role]),
    )


_CONTEXT = "Task:\n{task}\n\nEvaluation rubric:\n{rubric}\n\n"
_PAIR = (
    "=== Solution A ===\n{candidateA}\n=== End of Solution A ===\n\n"
    "=== Solution B ===\n{candidateB}\n=== End of Solution B ===\n\n"
)
_VERDICT = (
    "Reply with this JSON object and nothing else:\n"
    '{{"feedback_a": "<feedback on Solution A>", "feedback_b": "<feedback on Solution B>", '
    '"winner": "A" or "B" or "tie", "confidence": <number from 0 to 1>}}'
)

_GENERAL: dict[Role, PromptTemplate] = {
    "generate": PromptTemplate(
        system=(
            "You are a meticulous expert. You think problems through, check your own work, and "
            "give complete, self-contained answers."
        ),
        user=_CONTEXT
        + "Write your best complete answer to the task. Reason carefully, test the result "
        "against the rubric, and state the final answer clearly at the end.",
    ),
    "compare": PromptTemplate(
        system=(
            "You are an impartial, exacting reviewer comparing two answers to the same task. "
            "The order they are shown in is random and must not sway you. You answer with one "
            "JSON object only."
        ),
        user=_CONTEXT
        + _PAIR
        + "Judge both solutions against the task and the rubric. For each, write concrete "
        "feedback its author can act on: what is wrong or missing and how to fix it, and what "
        'already works. Then pick the better solution; say "tie" only if neither is better.\n\n'
        + _VERDICT,
    ),
    "mutate": PromptTemplate(
        system=(
            "You are an expert who improves an existing answer from reviewers' feedback: keep "
            "what is right, fix what is wrong, and deliver a complete replacement."
        ),
        user=_CONTEXT + "Current solution:\n{candidate}\n\n"
        "Feedback from pairwise reviews of this solution:\n{critique}\n\n"
        "Write an improved, complete answer to the task. Act on every sound point of the "
        "feedback, keep what already works, and do not mention the feedback or the reviews. "
        "Reply with the improved answer only.",
    ),
    "finalize": PromptTemplate(
        system=(
            "You are a careful editor. You polish a chosen answer for delivery; you do not "
            "replace it with a different one."
        ),
        user=_CONTEXT + "Chosen solution:\n{candidate}\n\n"
        "Polish the chosen solution into the final answer. Keep its approach, its conclusions "
        "and everything in it that is correct; do not start over or change the method. Fix "
        "only clear slips (typos, an arithmetic or wording error you can verify), remove "
        "scaffolding and repetition, and improve the layout. If it is already fine, return it "
        "as it is. Reply with the final answer only.",
    ),
}

_CPP = (
    "one complete C++17 program that reads standard input and writes standard output, in a "
    "single ```cpp code block; it must compile with g++ -std=c++17 and print nothing but the "
    "required output"
)

# Per-role code rubrics of the paper-programming style: what a generator must deliver, what a
# judge weighs (in order) and what a mutator must keep. Shown alongside the task's own rubric.
CODE_RUBRICS: Mapping[Role, str] = MappingProxyType(
    {
        "generate": (
            "Code rubric for your submission:\n"
            "1. Correct on every input the constraints allow, including the smallest and largest.\n"
            "2. Time and memory complexity that fit the limits with room to spare.\n"
            "3. No undefined behaviour: no overflow (use 64-bit where sums or products grow), no "
            "out-of-bounds access, no uninitialised values.\n"
            "4. Reads the input exactly as specified and prints exactly the required output.\n"
            "5. One self-contained C++17 program, standard library only."
        ),
        "compare": (
            "Code rubric for your verdict, most important first:\n"
            "1. Would it be accepted: a wrong algorithm or a wrong answer on any valid input "
            "outweighs everything below.\n"
            "2. Complexity against the limits: a solution that times out or runs out of memory "
            "loses to a slower-looking one that fits.\n"
            "3. Edge cases and undefined behaviour: empty or minimal input, maximal values, "
            "overflow, off-by-one, out-of-bounds access.\n"
            "4. Input and output format, and whether it compiles as C++17.\n"
            "5. Only then clarity; length and commentary count for nothing."
        ),
        "mutate": (
            "Code rubric for your revision:\n"
            "1. Fix every defect the feedback proves and any other you find; keep what is "
            "already correct.\n"
            "2. Change the algorithm only if the current one is wrong or too slow for the "
            "limits.\n"
            "3. Re-check complexity, overflow, edge cases and the input/output format after "
            "the change.\n"
            "4. Deliver the whole program, never a fragment or a diff."
        ),
        "finalize": (
            "Code rubric for the final submission:\n"
            "1. The algorithm, its correctness argument and its complexity stay as they are.\n"
            "2. Fix only a defect you can point at (overflow, a bound, an off-by-one, output "
            "format).\n"
            "3. One complete C++17 program, standard library only."
        ),
    }
)


def _code_rubric(role: Role) -> str:
    # Templates are substituted, so literal braces would need doubling; the rubrics have none.
    return CODE_RUBRICS[role] + "\n\n"


_PROBLEM = "Problem:\n{task}\n\nEvaluation rubric:\n{rubric}\n\n"

_PAPER_PROGRAMMING: dict[Role, PromptTemplate] = {
    "generate": PromptTemplate(
        system=(
            "You are a strong competitive programmer. You solve algorithmic problems with "
            "correct, efficient C++17 programs and you reason about limits before coding."
        ),
        user=_PROBLEM
        + _code_rubric("generate")
        + "Work out the constraints, an algorithm that fits them, its time and memory complexity "
        f"and the edge cases. Then give {_CPP}.",
    ),
    "compare": PromptTemplate(
        system=(
            "You are a strict competitive-programming judge reviewing two C++17 solutions to "
            "one problem. You cannot run them: reason about correctness, complexity against the "
            "limits, edge cases, overflow and input handling. The order is random. You answer "
            "with one JSON object only."
        ),
        user=_PROBLEM
        + _code_rubric("compare")
        + _PAIR
        + "For each solution, say precisely where it would fail (wrong answer, time or memory "
        "limit, compile error, edge case) and how to fix it. Then pick the solution more likely "
        'to be accepted; say "tie" only if neither is.\n\n' + _VERDICT,
    ),
    "mutate": PromptTemplate(
        system=(
            "You are a strong competitive programmer fixing a C++17 solution from a judge's review."
        ),
        user=_PROBLEM + _code_rubric("mutate") + "Current solution:\n{candidate}\n\n"
        "Review feedback from pairwise comparisons:\n{critique}\n\n"
        "Fix every real defect the feedback points at and any other you find, keeping what "
        f"works. Explain the corrected algorithm briefly, then give {_CPP}.",
    ),
    "finalize": PromptTemplate(
        system=(
            "You are a competitive programmer preparing the chosen solution for submission. "
            "You keep its algorithm; you do not write a new program."
        ),
        user=_PROBLEM + _code_rubric("finalize") + "Chosen solution:\n{candidate}\n\n"
        "Keep this solution's algorithm and everything in it that is correct. Check it once "
        "more against the limits and the edge cases and fix only a defect you can point at; if "
        "there is none, keep the code as it is. Reply with a short explanation of the algorithm "
        f"and {_CPP}.",
    ),
}

_TEMPLATES: Mapping[Style, Mapping[Role, PromptTemplate]] = MappingProxyType(
    {"general": _GENERAL, "paper-programming": _PAPER_PROGRAMMING}
)
