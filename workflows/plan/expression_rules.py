"""Plan rules for CEL sites and ensure predicates (docs/plans.md, "Expressions, ensure, iterate and
set").

Pure. Mixed into the rules checker (``workflows.plan.rules``): every ``set`` value,
``ensure[].expr`` and ``iterate.until`` is analysed once per distinct text
(``workflows.plan.expressions``), then held to its site: the names the site binds
(``expr.unknown_name``) and the steps it may read (``ref.unknown_step``, ``ref.not_earlier``,
``ref.chain_member``, as for ``${steps...}``). File predicates' paths are templates (checked as
prompts are) whose literal text must stay inside the workspace (``path.escapes_root``). Before
anything is parsed, the plan's distinct expressions (flow bodies included) are held to their
plan-wide ceilings on the raw document (``expression_budget_error``, run by ``validate``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from workflows.plan.errors import PlanError
from workflows.plan.expressions import (
    MAX_PLAN_EXPRESSION_CHARS,
    MAX_PLAN_EXPRESSIONS,
    analyse,
    unknown_names,
)
from workflows.plan.graph import StepGraph
from workflows.plan.model import (
    AgentStep,
    Ensure,
    EnsureExpr,
    EnsureFileContains,
    EnsureFileExists,
    EnsureJudged,
    RunStep,
    SetStep,
)
from workflows.plan.paths import lexical_problem
from workflows.plan.refs import Ref, RefError, parse_template

__all__ = ["ExpressionRules", "bound_names", "expression_budget_error", "step_expressions"]


def bound_names(step: AgentStep | SetStep | RunStep, *, member: bool, result: bool) -> set[str]:
    """The names an expression of ``step`` may read: ``input`` and ``steps`` everywhere,
    ``result`` in predicates, ``item``/``item_index`` in a fan-out chain member, ``iteration``
    in an iterating step."""
    names = {"input", "steps"}
    if result:
        names.add("result")
    if member:
        names |= {"item", "item_index"}
    if isinstance(step, AgentStep) and step.iterate is not None:
        names.add("iteration")
    return names


def step_expressions(step: object) -> Iterator[tuple[str, tuple[str | int, ...], bool]]:
    """(text, path under the step, whether ``result`` is bound) of every CEL site of a step."""
    if isinstance(step, SetStep):
        for key, text in step.values.items():
            yield text, ("set", key), False
    if isinstance(step, AgentStep | SetStep | RunStep):
        for k, predicate in enumerate(step.ensure):
            if isinstance(predicate, EnsureExpr):
                yield predicate.expr, ("ensure", k, "expr"), True
    if isinstance(step, AgentStep) and step.iterate is not None:
        yield step.iterate.until, ("iterate", "until"), True


def _path_text(template: str) -> str:
    """A path template with each reference replaced by a plain segment, for the lexical check
    (``../${input.x}`` still climbs out; the rendered value is checked again at run time)."""
    try:
        segments = parse_template(template)
    except RefError:
        return template
    return "".join("x" if isinstance(s, Ref) else s for s in segments)


def _raw_expressions(doc: Mapping[str, Any]) -> Iterator[str]:
    """Every CEL text of a document as written (top-level steps and flow bodies), before any
    of it is parsed."""
    bodies: list[Any] = [doc.get("steps")]
    flows = doc.get("flows")
    if isinstance(flows, dict):
        bodies += [f.get("steps") for f in flows.values() if isinstance(f, dict)]
    for steps in bodies:
        for step in steps if isinstance(steps, list) else []:
            if not isinstance(step, dict):
                continue
            values = step.get("set")
            if isinstance(values, dict):
                yield from (v for v in values.values() if isinstance(v, str))
            ensure = step.get("ensure")
            for entry in ensure if isinstance(ensure, list) else []:
                if isinstance(entry, dict) and isinstance(entry.get("expr"), str):
                    yield entry["expr"]
            iterate = step.get("iterate")
            if isinstance(iterate, dict) and isinstance(iterate.get("until"), str):
                yield iterate["until"]
            if isinstance(step.get("when"), str):
                yield step["when"]


def expression_budget_error(doc: Mapping[str, Any]) -> PlanError | None:
    """The plan-wide ceiling on distinct expressions, checked on the raw document so that a
    plan over it is refused without parsing any of them (validation also runs in the
    workflow's first task)."""
    texts = set(_raw_expressions(doc))
    chars = sum(len(t) for t in texts)
    if len(texts) <= MAX_PLAN_EXPRESSIONS and chars <= MAX_PLAN_EXPRESSION_CHARS:
        return None
    return PlanError(
        "expr.too_complex",
        "steps",
        f"the plan has {len(texts)} distinct expressions of {chars} characters, over "
        f"{MAX_PLAN_EXPRESSIONS} expressions or {MAX_PLAN_EXPRESSION_CHARS} characters; "
        "fix: reuse expressions or split the plan",
    )


class ExpressionRules(StepGraph):
    def cel(self, i: int, text: str, names: set[str], *parts: str | int) -> None:
        analysis = analyse(text)
        for code, message in analysis.problems:
            self.error(code, i, *parts, message=message)
        unknown = unknown_names(analysis, names)
        if unknown:
            self.error(
                "expr.unknown_name",
                i,
                *parts,
                message=f"{', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not "
                f"bound here (this expression may read {', '.join(sorted(names))}); fix: use "
                "one of those names",
            )
        for target in analysis.steps:
            problem = self.visible(i, target)
            if problem is not None:
                code, why = problem
                self.error(code, i, *parts, message=f'steps["{target}"]: {why}')

    def condition(self, i: int, step: object) -> None:
        """A step's ``when``: CEL over ``input`` and earlier steps; a fan-out's chain member
        takes none (it runs once per item, as its fan-out decides)."""
        text = getattr(step, "when", None)
        if text is None:
            return
        if getattr(step, "id", None) in self.owner:
            self.error(
                "when.chain_member",
                i,
                "when",
                message="a fan-out's chain member runs for every item its fan-out activates; "
                "fix: move when to the fan-out, or test the item in an ensure",
            )
            return
        self.cel(i, text, {"input", "steps"}, "when")

    def predicates(self, i: int, step: AgentStep | SetStep | RunStep) -> None:
        """The CEL sites and ensure predicates of an agent, set or run step."""
        member = step.id in self.owner
        for text, parts, result in step_expressions(step):
            self.cel(i, text, bound_names(step, member=member, result=result), *parts)
        for k, predicate in enumerate(step.ensure):
            self.file_predicate(i, k, predicate)
            if isinstance(step, SetStep | RunStep) and isinstance(predicate, EnsureJudged):
                what = (
                    "a set step dispatches nothing"
                    if isinstance(step, SetStep)
                    else "a run step is not a boundary (nothing reserves its call)"
                )
                where = "an agent step" if isinstance(step, SetStep) else "the flow's last step"
                self.error(
                    "ensure.form",
                    i,
                    "ensure",
                    k,
                    message=f"a {step.kind} step takes expr, file_exists and file_contains "
                    f"predicates: judged is a model call, and {what}; fix: judge in {where}",
                )

    def file_predicate(self, i: int, k: int, predicate: Ensure) -> None:
        parts: tuple[str | int, ...]
        if isinstance(predicate, EnsureFileExists):
            path, parts = predicate.file_exists, ("ensure", k, "file_exists")
        elif isinstance(predicate, EnsureFileContains):
            path, parts = predicate.file_contains.path, ("ensure", k, "file_contains", "path")
        else:
            return
        self.template(i, path, *parts)
        why = lexical_problem(_path_text(path))
        if why is not None:
            self.error(
                "path.escapes_root",
                i,
                *parts,
                message=f"{path!r} is {why}; fix: give a path relative to the workspace",
            )
