"""Cross-field plan rules (docs/plans.md, "Validation"), run after every step has been parsed.

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
  and an ancestor target; a deadline has a default (approve | kill) and escalation comes
  before it (``deadlines``);
- a chain lists agent steps owned by this fan-out alone, whose deps stay inside the chain or
  before the fan-out; a fan-out over a reference needs ``max_fanout``; concurrency and quorum fit;
  ``isolation: worktree`` takes only members the engine dispatches;
- pause resume args are unique, pause schemas are usable bounded JSON Schemas
  (``workflows/json_schemas.py``); tournament profiles exist;
- a ``run`` step names a flow, its ``with`` meets the flow's input contract; a flow's body keeps
  these rules inside it (``check_body``), and its ``output`` names one of its own steps;
- a nested budget fits what it covers: a step's one occurrence, a fan-out's region, a sub-flow's
  worst child boundary; a chain member has none of its own (its ledger is its fan-out's);
- CEL sites (``set`` values, ``ensure[].expr``, ``iterate.until``) and ensure predicates hold
  to ``workflows.plan.expression_rules``;
- an explicit plan budget fits the worst single boundary;
- ``dispatch: consumer`` only on agent steps outside worktree isolation; checkpoint labels
  unique, on top-level steps, at most 50 (``consumer``, ``checkpoints``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from workflows.json_schemas import (
    MAX_DOCUMENT_SCHEMAS_BYTES,
    MAX_DOCUMENT_SCHEMAS_NODES,
    json_size,
    json_values,
    schema_problems,
)
from workflows.plan.boundaries import (
    AnyStep,
    Reservation,
    activated_items,
    body_boundaries,
    boundaries,
    occurrence,
    region_reservation,
    unsatisfiable,
    worst_items,
)
from workflows.plan.contracts import parse_type
from workflows.plan.deadlines import deadline_problems
from workflows.plan.errors import PlanError, join_path
from workflows.plan.expression_rules import ExpressionRules
from workflows.plan.feature_rules import checkpoint_errors, consumer_errors
from workflows.plan.flows import FlowSignature, input_fields
from workflows.plan.limits import limit_errors
from workflows.plan.model import (
    MAX_STEPS,
    AgentStep,
    FanoutStep,
    FlowHeader,
    GateStep,
    LedgerBudget,
    PauseStep,
    Plan,
    PlanBudget,
    RunStep,
    SetStep,
    TournamentStep,
)
from workflows.plan.paths import lexical_problem
from workflows.plan.refs import Ref, RefError, parse_template, whole_reference
from workflows.tournament.errors import TournamentError
from workflows.tournament.profiles import BUILTIN_PROFILES

__all__ = ["budget_errors", "check_body", "check_plan", "check_steps"]

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
    errors: list[PlanError] = []
    signatures: dict[str, FlowSignature] = {}
    for name, flow in plan.flows.items():
        body: list[AnyStep | None] = list(flow.steps)
        more, signatures[name] = check_body(
            name,
            flow,
            body,
            [s.id for s in flow.steps],
            contracts=plan.contracts,
            max_rounds=plan.max_rounds,
        )
        errors += more
    steps: list[AnyStep | None] = list(plan.steps)
    errors += check_steps(
        steps,
        [s.id for s in plan.steps],
        contracts=plan.contracts,
        max_rounds=plan.max_rounds,
        flows=signatures,
    )
    if not errors:
        errors += budget_errors(plan)
    if not errors:
        errors += limit_errors(plan)  # the history estimate needs a consistent plan
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


class _Checker(ExpressionRules):
    """The per-kind rules, on top of the graph rules."""

    flows: Mapping[str, FlowSignature]
    schema_bytes = 0
    schema_values = 0
    """The pause schemas' JSON bytes and values so far (their checks together are bounded)."""

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
        self.out_contract(i, step)
        self.predicates(i, step)
        self.on_fail(i, step)

    def set_step(self, i: int, step: SetStep) -> None:
        self.out_contract(i, step)
        self.predicates(i, step)

    def out_contract(self, i: int, step: AgentStep | SetStep | RunStep) -> None:
        """``out`` names a declared contract."""
        if step.out is not None and step.out not in self.contracts:
            known = ", ".join(sorted(self.contracts)) or "none declared"
            self.error(
                "contract.unknown",
                i,
                "out",
                message=f"out {step.out!r} names no contract ({known}); "
                "fix: declare it under contracts",
            )

    def on_fail(self, i: int, step: AgentStep | RunStep) -> None:
        if step.on_fail is None:
            return
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

    def run_step(self, i: int, step: RunStep) -> None:
        """A sub-flow call: the flow exists, ``with`` meets its input contract and its
        templates resolve in the caller's scope."""
        for key, value in step.with_.items():
            for text in _strings(value):
                self.template(i, text, "with", key)
        self.out_contract(i, step)
        self.predicates(i, step)
        self.on_fail(i, step)
        signature = self.flows.get(step.flow)
        if signature is None:
            known = ", ".join(sorted(self.flows)) or "none declared"
            self.error(
                "flow.unknown",
                i,
                "flow",
                message=f"flow {step.flow!r} names no flow ({known}); fix: declare it under "
                "flows, or correct the name",
            )
            return
        fields = signature.fields
        if fields is None:
            return
        for key in step.with_:
            if key not in fields:
                self.error(
                    "flow.with",
                    i,
                    "with",
                    key,
                    message=f"with.{key}: flow {step.flow!r}'s input contract has no field "
                    f"{key!r} (fields: {', '.join(sorted(fields)) or 'none'}); fix: drop it or "
                    "add it to the flow's input",
                )
        for field, expr in fields.items():
            if field in step.with_:
                continue
            try:
                optional = parse_type(expr, self.contracts).optional
            except ValueError:
                continue  # reported where the contract is declared
            if not optional:
                self.error(
                    "flow.with",
                    i,
                    "with",
                    message=f"flow {step.flow!r} requires input {field!r} ({expr}); fix: add "
                    f"with.{field}",
                )

    def nested_budget(self, i: int, step: AnyStep) -> None:
        """A nested ledger fits what it covers (below the sum is legal: it fails when met)."""
        budget = getattr(step, "budget", None)
        if not isinstance(budget, LedgerBudget) or not budget.is_set():
            return
        if step.id in self.owner:
            fan = self.ids[self.owner[step.id]]
            self.error(
                "budget.chain_member",
                i,
                "budget",
                message=f"chain member {step.id!r} spends in fan-out {fan!r}'s ledger; fix: move "
                f"calls/tokens/usd/wall_ms to {fan!r}'s budget (max_agents stays here)",
            )
            return
        worst: Reservation | None = None
        what = ""
        if isinstance(step, AgentStep | GateStep):
            worst, what = occurrence(step), "one occurrence of this step"
        elif isinstance(step, FanoutStep):
            chain = [self.steps[self.index[m]] for m in step.fanout.chain if m in self.index]
            if all(isinstance(c, AgentStep) for c in chain):
                members = [c for c in chain if c is not None]
                worst = region_reservation(step, members, worst_items(step))
                what = "the region"
        elif isinstance(step, RunStep):
            signature = self.flows.get(step.flow)
            if signature is not None and signature.worst is not None:
                worst = signature.worst
                what = f"child boundary {step.id}/{signature.worst_step}"
        if worst is None:
            return
        for field, need, unit in (
            ("calls", worst.invocations, "invocation(s)"),
            ("wall_ms", worst.wall_ms, "ms"),
        ):
            limit = getattr(budget, field)
            if limit is not None and need > limit:
                self.error(
                    "budget.unsatisfiable",
                    i,
                    "budget",
                    field,
                    message=f"budget.{field}={limit} is below the {need} {unit} that {what} "
                    f"needs at worst; fix: give at least {need}, or lower the retries/timeouts "
                    "inside",
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
        if terminal and route is not None and not _TERMINAL.fullmatch(route):
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
        for where, message in deadline_problems(gate):
            self.error("gate.deadline", i, "gate", *where, message=message)
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
        if spec.isolation == "worktree":
            self.isolation(i, spec.chain)
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

    def isolation(self, i: int, chain: list[str]) -> None:
        """``isolation: worktree``: an item's worktree is where the engine runs its executors,
        so every member must be one the engine dispatches (an external executor never sees
        the worktree)."""
        for member in chain:
            j = self.index.get(member)
            target = self.steps[j] if j is not None else None
            dispatch = getattr(target, "dispatch", "engine")
            if isinstance(target, AgentStep) and dispatch != "engine":
                self.error(
                    "fanout.isolation",
                    i,
                    "fanout",
                    "isolation",
                    message=f"chain member {member!r} is dispatch: {dispatch}, and a worktree "
                    "is seen only by the engine's executors; fix: isolation: none, or "
                    "dispatch: engine on the member",
                )

    def pause_schema(self, i: int, step: PauseStep) -> None:
        """A pause's JSON Schema is checked as a schema here (RE2 patterns, bounded size, the
        Draft 2020-12 meta-schema), so a resume value is never what finds it broken; all of a
        plan's schemas together are bounded too (each is checked in the workflow's decoding)."""
        schema = step.pause.json_schema
        if schema is None:
            return
        self.schema_bytes += json_size(schema)
        self.schema_values += json_values(schema)
        if (
            self.schema_bytes > MAX_DOCUMENT_SCHEMAS_BYTES
            or self.schema_values > MAX_DOCUMENT_SCHEMAS_NODES
        ):
            self.error(
                "pause.schema",
                i,
                "pause",
                "schema",
                message=f"the plan's pause schemas together are over "
                f"{MAX_DOCUMENT_SCHEMAS_BYTES} bytes of JSON or {MAX_DOCUMENT_SCHEMAS_NODES} "
                "values; fix: use fewer or smaller schemas",
            )
            return
        for problem in schema_problems(schema):
            self.error(
                "pause.schema",
                i,
                "pause",
                "schema",
                *problem.path,
                message=problem.message
                if "fix:" in problem.message
                else f"{problem.message}; fix: correct it (a pause schema is a JSON Schema, "
                "Draft 2020-12)",
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

    def run(self, *, own_contracts: bool = True) -> list[PlanError]:
        self.ids_unique()
        if own_contracts:
            self.contracts_parse()
        resume_args: dict[str, int] = {}
        for i, step in enumerate(self.steps):
            if step is None:
                continue
            self.deps(i, step)
            self.condition(i, step)
            owner = self.owner.get(step.id)
            if owner is not None and owner != i:
                self.member(i, step, owner)
            else:
                self.outsider(i, step)
            self.nested_budget(i, step)
            if isinstance(step, AgentStep):
                self.agent(i, step)
            elif isinstance(step, RunStep):
                self.run_step(i, step)
            elif isinstance(step, GateStep):
                self.gate(i, step)
            elif isinstance(step, FanoutStep):
                self.fanout(i, step)
            elif isinstance(step, SetStep):
                self.set_step(i, step)
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
                self.pause_schema(i, step)
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
                custom = step.tournament.custom
                if custom is not None:
                    try:
                        custom.check()
                    except TournamentError as exc:
                        self.error(
                            "tournament.profile",
                            i,
                            "tournament",
                            "custom",
                            message=f"{exc.message}; fix: adjust n, k, t, m",
                        )
        self.errors += consumer_errors(self.steps, self.owner)
        # A flow body's steps (own_contracts False) are not top-level: none takes a checkpoint.
        self.errors += checkpoint_errors(self.steps, self.owner, top_level=own_contracts)
        return self.errors


def check_steps(
    steps: Sequence[AnyStep | None],
    ids: Sequence[str | None],
    *,
    contracts: Mapping[str, Mapping[str, str]],
    max_rounds: int | None,
    flows: Mapping[str, FlowSignature] | None = None,
) -> list[PlanError]:
    checker = _Checker(steps, ids, contracts, max_rounds)
    checker.flows = flows or {}
    errors = checker.run()
    walked = len(steps) + sum(
        checker.flows[s.flow].size
        for s in steps
        if isinstance(s, RunStep) and s.flow in checker.flows
    )
    if walked > MAX_STEPS:
        errors.append(
            PlanError(
                "flow.too_large",
                "steps",
                f"the walk has {walked} steps counting each run step's flow children, over "
                f"the {MAX_STEPS} a plan may have; fix: call large flows from fewer run steps",
            )
        )
    return errors


def check_body(
    name: str,
    flow: FlowHeader | None,
    steps: Sequence[AnyStep | None],
    ids: Sequence[str | None],
    *,
    contracts: Mapping[str, Mapping[str, str]],
    max_rounds: int | None,
) -> tuple[list[PlanError], FlowSignature]:
    """A flow body under part 1's rules (paths ``flows.NAME.steps[i]...``), its ``output`` and
    ``${input.x}`` references against its input contract; and the flow's signature for the
    ``run`` steps that call it. ``flow`` is None when its header did not parse."""
    base = join_path("flows", name)
    checker = _Checker(steps, ids, contracts, max_rounds)
    checker.flows = {}
    errors = [
        PlanError(e.code, f"{base}.{e.path}", e.message) for e in checker.run(own_contracts=False)
    ]
    fields = input_fields(flow, contracts) if flow is not None else None
    if flow is not None and isinstance(flow.input, str) and flow.input not in contracts:
        errors.append(
            PlanError(
                "contract.unknown",
                join_path(base, "input"),
                f"input {flow.input!r} names no contract; fix: declare it under contracts, or "
                "give the fields inline",
            )
        )
        fields = None
    elif flow is not None and isinstance(flow.input, dict):
        for field, expr in flow.input.items():
            try:
                parse_type(expr, contracts)
            except ValueError as exc:
                errors.append(
                    PlanError(
                        "contract.type",
                        join_path(base, "input", field),
                        f"{exc}; fix: use a primitive or a declared contract name",
                    )
                )
    for i, step in enumerate(steps):
        prompt = getattr(step, "prompt", None)
        if fields is None or not isinstance(prompt, str):
            continue
        try:
            segments = parse_template(prompt)
        except RefError:
            continue  # reported as ref.syntax
        for seg in segments:
            if isinstance(seg, Ref) and seg.source == "input" and seg.name not in fields:
                errors.append(
                    PlanError(
                        "flow.with",
                        join_path(base, "steps", i, "prompt"),
                        f"{seg.text()}: the flow's input contract has no field {seg.name!r}; "
                        "fix: add it to the flow's input, or reference a declared field",
                    )
                )
    if flow is not None and flow.output is not None:
        ref = whole_reference(flow.output)
        if ref is None or ref.source != "steps" or ref.name not in ids:
            errors.append(
                PlanError(
                    "flow.output",
                    join_path(base, "output"),
                    f"output {flow.output!r} must be one ${{steps.<id>.output[.path]}} naming a "
                    "step of this flow; fix: e.g. ${steps.<last step>.output}",
                )
            )
    worst = None
    worst_step = None
    if not errors and all(s is not None for s in steps):
        walk = body_boundaries([s for s in steps if s is not None])
        if walk:
            top = max(walk, key=lambda b: (b.reservation.invocations, b.reservation.wall_ms))
            wall = max(b.reservation.wall_ms for b in walk)
            worst = Reservation(top.reservation.invocations, wall)
            worst_step = top.step_id
    return errors, FlowSignature(fields, worst, worst_step, size=len(steps))


def _strings(value: object) -> list[str]:
    """The strings in a ``with`` value (templates), depth-first."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return []
