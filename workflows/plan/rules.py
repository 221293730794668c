"""Cross-field plan rules (plans.md "Validation"), run after every step has been parsed.

Pure. Each rule reports every violation it finds as a ``PlanError``; a step that failed to parse
is passed as None (its id, when readable, still counts, so a typo in one step does not make every
reference to it an error too). The rules:

- ids unique; deps name earlier steps, no duplicates, no cycles;
- ``${...}`` references parse and name earlier steps (a chain member's output only inside its
  chain, from a later member);
- ``max_attempts > 1`` needs ``idempotent``; a file deliverable declares writes; artifact paths
  stay inside the workspace (the text part; the file-system part runs at preflight/dispatch);
- ``out`` names a contract; contract field types parse; ``on_fail`` names a later top-level agent;
- a gate is a model gate or a human gate; a route targets an earlier agent step or
  ``terminal:<label>``; ``max_redos > 0`` needs a non-terminal route; revise needs ``max_rounds``
  and an ancestor target;
- a chain lists agent steps owned by this fan-out alone, whose deps stay inside the chain or
  before the fan-out; a fan-out over a reference needs ``max_fanout``; concurrency and quorum fit;
- pause resume args are unique; tournament profiles exist;
- an explicit plan budget fits the worst single boundary.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from workflows.plan.boundaries import AnyStep, activated_items, boundaries, unsatisfiable
from workflows.plan.contracts import parse_type
from workflows.plan.errors import PlanError, join_path
from workflows.plan.model import (
    AgentStep,
    FanoutStep,
    GateStep,
    PauseStep,
    Plan,
    PlanBudget,
    TournamentStep,
)
from workflows.plan.paths import lexical_problem
from workflows.plan.refs import Ref, RefError, parse_template, whole_reference
from workflows.tournament.profiles import BUILTIN_PROFILES

__all__ = ["budget_errors", "check_plan", "check_steps"]

_TERMINAL = re.compile(r"^terminal:[A-Za-z0-9_.:-]{1,64}$")
_MODEL_GATE_FIELDS = (
    "prompt",
    "model",
    "family",
    "timeout_ms",
    "tools",
    "artifacts",
    "retry",
    "idempotent",
    "budget",
    "role",
    "fail_route",
    "max_redos",
)


def check_plan(plan: Plan) -> list[PlanError]:
    """Every cross-field error of a parsed plan (workflow input is checked with this too)."""
    steps: list[AnyStep | None] = list(plan.steps)
    errors = check_steps(
        steps,
        [s.id for s in plan.steps],
        contracts=plan.contracts,
        max_rounds=plan.max_rounds,
    )
    if not errors:
        errors += budget_errors(plan)
    return errors


def budget_errors(plan: Plan) -> list[PlanError]:
    budget: PlanBudget | None = plan.budget
    if budget is None:
        return []
    found = unsatisfiable(boundaries(plan), calls=budget.calls, wall_ms=budget.wall_ms)
    if found is None:
        return []
    _, why = found
    field = "calls" if why.startswith("calls=") else "wall_ms"
    return [PlanError("budget.unsatisfiable", f"budget.{field}", why)]


class _Checker:
    def __init__(
        self,
        steps: Sequence[AnyStep | None],
        ids: Sequence[str | None],
        contracts: Mapping[str, Mapping[str, str]],
        max_rounds: int | None,
    ) -> None:
        self.steps = steps
        self.ids = ids
        self.contracts = contracts
        self.max_rounds = max_rounds
        self.errors: list[PlanError] = []
        self.index: dict[str, int] = {}
        for i, step_id in enumerate(ids):
            if step_id is not None and step_id not in self.index:
                self.index[step_id] = i
        # member id -> index of the fan-out that owns it (first owner wins; a second is an error)
        self.owner: dict[str, int] = {}
        for i, step in enumerate(steps):
            if isinstance(step, FanoutStep):
                for member in step.fanout.chain:
                    self.owner.setdefault(member, i)

    def error(self, code: str, i: int, *parts: str | int, message: str) -> None:
        self.errors.append(PlanError(code, join_path(f"steps[{i}]", *parts), message))

    # -- ids and deps ---------------------------------------------------------------------

    def ids_unique(self) -> None:
        for i, step_id in enumerate(self.ids):
            if step_id is not None and self.index.get(step_id) != i:
                first = self.index[step_id]
                self.error(
                    "step.id_duplicate",
                    i,
                    "id",
                    message=f"id {step_id!r} is already used by steps[{first}]; "
                    "fix: give each step its own id",
                )

    def deps(self, i: int, step: AnyStep) -> None:
        seen: set[str] = set()
        for k, dep in enumerate(step.deps):
            if dep in seen:
                self.error(
                    "deps.duplicate",
                    i,
                    "deps",
                    k,
                    message=f"dep {dep!r} is listed twice; fix: list it once",
                )
                continue
            seen.add(dep)
            j = self.index.get(dep)
            if j is None:
                self.error(
                    "deps.unknown",
                    i,
                    "deps",
                    k,
                    message=f"dep {dep!r} names no step; fix: use one of the ids above this step",
                )
            elif j == i or (j > i and self._reaches(j, i)):
                # Only a forward dep can close a cycle (deps pointing back cannot reach a later
                # step on their own), so the cycle is reported on the forward edge, in O(n).
                self.error(
                    "deps.cycle",
                    i,
                    "deps",
                    k,
                    message=f"dep {dep!r} closes a cycle back to {step.id!r}; "
                    "fix: deps point to earlier steps only",
                )
            elif j > i:
                self.error(
                    "deps.not_earlier",
                    i,
                    "deps",
                    k,
                    message=f"dep {dep!r} is steps[{j}], after this step; "
                    "fix: move it above or drop the dep (plans run in order)",
                )

    def _reaches(self, start: int, target: int) -> bool:
        """Whether steps[start] depends on steps[target], directly or transitively."""
        stack, seen = [start], {start}
        while stack:
            step = self.steps[stack.pop()]
            for dep in step.deps if step is not None else []:
                j = self.index.get(dep)
                if j == target:
                    return True
                if j is not None and j not in seen:
                    seen.add(j)
                    stack.append(j)
        return False

    def is_ancestor(self, target: int, i: int) -> bool | None:
        """Whether steps[i] depends on steps[target] through deps; None when a step on the way
        failed to parse. Steps before ``target`` cannot lead back to it, so they are skipped."""
        seen: set[int] = set()
        stack = [i]
        while stack:
            step = self.steps[stack.pop()]
            if step is None:
                return None
            for dep in step.deps:
                j = self.index.get(dep)
                if j == target:
                    return True
                if j is not None and j > target and j not in seen:
                    seen.add(j)
                    stack.append(j)
        return False

    # -- references -----------------------------------------------------------------------

    def visible(self, i: int, target: str) -> tuple[str, str] | None:
        """Why steps[i] cannot read ``target``'s output: (code, message), or None."""
        j = self.index.get(target)
        if j is None:
            return "ref.unknown_step", f"{target!r} names no step; fix: use an earlier step's id"
        target_owner = self.owner.get(target)
        own = self.steps[i]
        own_owner = self.owner.get(own.id) if own is not None else None
        if target_owner is not None:
            chain = self._chain(target_owner)
            same = own_owner == target_owner and own is not None
            if not same or chain.index(target) >= chain.index(own.id if own else ""):
                return "ref.chain_member", (
                    f"{target!r} runs once per item inside fan-out "
                    f"{self.ids[target_owner]!r}; fix: read the fan-out's joined output "
                    f"${{steps.{self.ids[target_owner]}.output}} instead"
                )
            return None
        horizon = own_owner if own_owner is not None else i
        if j >= horizon:
            return "ref.not_earlier", (
                f"{target!r} is steps[{j}], which has not run when this step runs; "
                "fix: reference an earlier step"
            )
        return None

    def _chain(self, fanout_index: int) -> list[str]:
        step = self.steps[fanout_index]
        return list(step.fanout.chain) if isinstance(step, FanoutStep) else []

    def template(self, i: int, text: str, *parts: str | int) -> None:
        try:
            segments = parse_template(text)
        except RefError as exc:
            self.error(
                "ref.syntax",
                i,
                *parts,
                message=f"{exc}; fix: write ${{input.<key>}} or ${{steps.<id>.output}}",
            )
            return
        for segment in segments:
            if isinstance(segment, Ref) and segment.source == "steps":
                problem = self.visible(i, segment.name)
                if problem is not None:
                    code, why = problem
                    self.error(code, i, *parts, message=f"{segment.text()}: {why}")

    # -- per kind ---------------------------------------------------------------------------

    def invocation(self, i: int, step: AgentStep | GateStep) -> None:
        if step.prompt is not None:
            self.template(i, step.prompt, "prompt")
        if step.retry.max_attempts > 1 and not step.idempotent:
            self.error(
                "retry.needs_idempotent",
                i,
                "retry",
                "max_attempts",
                message=f"max_attempts={step.retry.max_attempts} retries a step that may have "
                "done part of its work; fix: set idempotent: true, or max_attempts: 1",
            )
        for field in ("reads", "writes"):
            for k, rel in enumerate(getattr(step.artifacts, field)):
                why = lexical_problem(rel)
                if why is not None:
                    self.error(
                        "path.escapes_root",
                        i,
                        "artifacts",
                        field,
                        k,
                        message=f"{rel!r} is {why}; fix: give a path relative to the workspace",
                    )

    def agent(self, i: int, step: AgentStep) -> None:
        self.invocation(i, step)
        if step.deliverable == "file" and not step.artifacts.writes:
            self.error(
                "deliverable.needs_writes",
                i,
                "deliverable",
                message="deliverable: file needs the files it writes; "
                "fix: list them in artifacts.writes (the landed barrier checks them)",
            )
        if step.out is not None and step.out not in self.contracts:
            known = ", ".join(sorted(self.contracts)) or "none declared"
            self.error(
                "contract.unknown",
                i,
                "out",
                message=f"out {step.out!r} names no contract ({known}); "
                "fix: declare it under contracts",
            )
        if step.on_fail is not None:
            j = self.index.get(step.on_fail)
            target = self.steps[j] if j is not None else None
            why = None
            if j is None:
                why = "names no step"
            elif step.id in self.owner:
                why = "is set on a fan-out chain member (a failed branch is null; the join decides)"
            elif j <= i:
                why = "is not after this step"
            elif step.on_fail in self.owner or (
                target is not None and not isinstance(target, AgentStep)
            ):
                why = "is not a top-level agent step"
            if why is not None:
                self.error(
                    "on_fail.target",
                    i,
                    "on_fail",
                    message=f"on_fail {step.on_fail!r} {why}; "
                    "fix: name a later top-level agent step that handles the failure",
                )

    def gate(self, i: int, step: GateStep) -> None:
        if step.gate is not None:
            # Compared with the defaults, not model_fields_set: a plan decoded from its own
            # JSON dump (workflow input) has every field set.
            defaults = {
                f: GateStep.model_fields[f].get_default(call_default_factory=True)
                for f in _MODEL_GATE_FIELDS
            }
            stray = [f for f in _MODEL_GATE_FIELDS if getattr(step, f) != defaults[f]]
            if stray:
                self.error(
                    "gate.mode",
                    i,
                    stray[0],
                    message=f"a human gate (gate: {{...}}) takes no {', '.join(stray)}; "
                    "fix: drop them, or drop gate: for a model gate",
                )
            self.human_gate(i, step)
            return
        if step.prompt is None:
            self.error(
                "gate.mode",
                i,
                message="a gate needs a prompt (a model gate) or gate: {...} (a human gate); "
                "fix: add one of them",
            )
            return
        self.invocation(i, step)
        route = step.fail_route
        terminal = route is not None and route.startswith("terminal:")
        if terminal and route is not None and not _TERMINAL.match(route):
            self.error(
                "gate.route",
                i,
                "fail_route",
                message=f"fail_route {route!r} is not terminal:<label> with label "
                "[A-Za-z0-9_.:-]{1,64}; fix: e.g. terminal:rejected",
            )
        elif route is not None and not terminal:
            j = self.index.get(route)
            target = self.steps[j] if j is not None else None
            unparsed = j is not None and target is None  # reported where it failed
            if not unparsed and (
                j is None or j >= i or route in self.owner or not isinstance(target, AgentStep)
            ):
                self.error(
                    "gate.route",
                    i,
                    "fail_route",
                    message=f"fail_route {route!r} must name an earlier top-level agent step "
                    "(the redo) or terminal:<label>; fix: point it at the step that makes "
                    "what this gate reviews",
                )
        if step.max_redos > 0 and (route is None or terminal):
            self.error(
                "gate.redos_need_route",
                i,
                "max_redos",
                message=f"max_redos={step.max_redos} has nothing to redo: "
                "fix: set fail_route to an earlier agent step, or max_redos: 0",
            )

    def human_gate(self, i: int, step: GateStep) -> None:
        gate = step.gate
        assert gate is not None
        for field in ("on_approve", "on_kill", "on_revise"):
            target = getattr(gate, field)
            if target is None:
                continue
            j = self.index.get(target)
            if j is None or j == i or target in self.owner:
                self.error(
                    "gate.target",
                    i,
                    "gate",
                    field,
                    message=f"{field} {target!r} must name another top-level step; "
                    "fix: use a step id, or null",
                )
            elif field == "on_revise" and self.is_ancestor(j, i) is False:
                self.error(
                    "gate.revise_not_ancestor",
                    i,
                    "gate",
                    field,
                    message=f"on_revise {target!r} is not an ancestor of this gate (through "
                    "deps): revise re-runs the target and what depends on it; "
                    "fix: target a step this gate depends on",
                )
        if gate.on_revise is not None and gate.max_rounds is None and self.max_rounds is None:
            self.error(
                "gate.revise_needs_rounds",
                i,
                "gate",
                "max_rounds",
                message="on_revise needs a bound on revise rounds; "
                "fix: set gate.max_rounds, or max_rounds on the plan",
            )

    def fanout(self, i: int, step: FanoutStep) -> None:
        spec = step.fanout
        for k, member in enumerate(spec.chain):
            j = self.index.get(member)
            target = self.steps[j] if j is not None else None
            why = None
            if j is None:
                why = "names no step"
            elif j == i:
                why = "is the fan-out itself"
            elif self.owner.get(member) != i:
                why = f"already belongs to fan-out {self.ids[self.owner[member]]!r}"
            elif spec.chain.index(member) != k:
                why = "is listed twice"
            elif target is not None and not isinstance(target, AgentStep):
                why = f"is a {target.kind} step, not an agent step"
            if why is not None:
                self.error(
                    "fanout.chain",
                    i,
                    "fanout",
                    "chain",
                    k,
                    message=f"chain member {member!r} {why}; "
                    "fix: list agent steps that only this fan-out runs",
                )
        activated: int | None = None
        if isinstance(spec.over, str):
            ref = whole_reference(spec.over)
            if ref is None:
                self.template(i, spec.over, "fanout", "over")
                self.error(
                    "fanout.over",
                    i,
                    "fanout",
                    "over",
                    message=f"over {spec.over!r} must be a list or exactly one ${{...}} "
                    "reference; fix: e.g. over: ${steps.find.output.items}",
                )
            elif ref.source == "steps":
                problem = self.visible(i, ref.name)
                if problem is not None:
                    code, why = problem
                    self.error(code, i, "fanout", "over", message=f"{ref.text()}: {why}")
            if spec.max_fanout is None:
                self.error(
                    "fanout.max_required",
                    i,
                    "fanout",
                    "max_fanout",
                    message="over is a reference, so the item count is unknown before the run; "
                    "fix: set max_fanout (only the first N items run)",
                )
            activated = spec.max_fanout
        else:
            activated = len(
                activated_items(spec.over, dedup=spec.dedup, max_fanout=spec.max_fanout)
            )
        if (
            spec.concurrency is not None
            and spec.max_fanout is not None
            and (spec.concurrency > spec.max_fanout)
        ):
            self.error(
                "fanout.concurrency",
                i,
                "fanout",
                "concurrency",
                message=f"concurrency={spec.concurrency} is over max_fanout="
                f"{spec.max_fanout}, which caps the items that run; "
                "fix: lower concurrency or raise max_fanout",
            )
        if spec.join.startswith("quorum:") and activated is not None:
            needed = int(spec.join.split(":", 1)[1])
            if needed > activated:
                self.error(
                    "join.quorum_unreachable",
                    i,
                    "fanout",
                    "join",
                    message=f"{spec.join} needs {needed} settled branches and at most "
                    f"{activated} item(s) run; fix: lower the quorum or add items",
                )

    def member(self, i: int, step: AnyStep, owner: int) -> None:
        """A chain member's deps stay in its chain (earlier members) or before the fan-out."""
        chain = self._chain(owner)
        for k, dep in enumerate(step.deps):
            j = self.index.get(dep)
            if j is None:
                continue  # reported by deps()
            inside = dep in chain and chain.index(dep) < chain.index(step.id)
            before = j < owner and dep not in self.owner
            if not (inside or before):
                self.error(
                    "fanout.member_deps",
                    i,
                    "deps",
                    k,
                    message=f"chain member {step.id!r} of fan-out {self.ids[owner]!r} depends on "
                    f"{dep!r}; fix: depend on earlier members of the chain or on steps before "
                    "the fan-out",
                )

    def outsider(self, i: int, step: AnyStep) -> None:
        for k, dep in enumerate(step.deps):
            if dep in self.owner and step.id not in self.owner:
                fan = self.ids[self.owner[dep]]
                self.error(
                    "fanout.member_referenced",
                    i,
                    "deps",
                    k,
                    message=f"{dep!r} runs once per item inside fan-out {fan!r}; "
                    f"fix: depend on {fan!r} (its joined output) instead",
                )

    def contracts_parse(self) -> None:
        for name, fields in self.contracts.items():
            for field, expr in fields.items():
                try:
                    parse_type(expr, self.contracts)
                except ValueError as exc:
                    self.errors.append(
                        PlanError(
                            "contract.type",
                            join_path("contracts", name, field),
                            f"{exc}; fix: use a primitive or a declared contract name",
                        )
                    )

    def run(self) -> list[PlanError]:
        self.ids_unique()
        self.contracts_parse()
        resume_args: dict[str, int] = {}
        for i, step in enumerate(self.steps):
            if step is None:
                continue
            self.deps(i, step)
            owner = self.owner.get(step.id)
            if owner is not None and owner != i:
                self.member(i, step, owner)
            else:
                self.outsider(i, step)
            if isinstance(step, AgentStep):
                self.agent(i, step)
            elif isinstance(step, GateStep):
                self.gate(i, step)
            elif isinstance(step, FanoutStep):
                self.fanout(i, step)
            elif isinstance(step, PauseStep):
                key = step.pause.resume_arg
                if key in resume_args:
                    self.error(
                        "pause.arg_duplicate",
                        i,
                        "pause",
                        "resume_arg",
                        message=f"resume_arg {key!r} is already steps[{resume_args[key]}]'s; "
                        "a value would satisfy both pauses at once; fix: use distinct keys",
                    )
                resume_args.setdefault(key, i)
            elif isinstance(step, TournamentStep):
                self.template(i, step.prompt, "prompt")
                if step.tournament.profile not in BUILTIN_PROFILES:
                    names = ", ".join(BUILTIN_PROFILES)
                    self.error(
                        "tournament.profile",
                        i,
                        "tournament",
                        "profile",
                        message=f"profile {step.tournament.profile!r} is not one of {names}; "
                        "fix: pick one of them",
                    )
        return self.errors


def check_steps(
    steps: Sequence[AnyStep | None],
    ids: Sequence[str | None],
    *,
    contracts: Mapping[str, Mapping[str, str]],
    max_rounds: int | None,
) -> list[PlanError]:
    return _Checker(steps, ids, contracts, max_rounds).run()
