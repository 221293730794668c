"""Map a stratum flow document (``version: 1``) onto ``ponder-plan/1``.

Pure, raw dict to raw dict, like ``loop_plan``: the result is validated by the same model and
rules as a ``ponder-plan/1`` document, and every path written is remembered so an error found
later is reported at the path the author wrote (``flows.main.steps[2].do``). The mapping:

- the ``entry`` flow's steps are the plan's steps; every other flow is a ``flows`` entry called
  by ``run`` steps (``with`` -> ``with``, the flow's ``output.contract`` -> the run step's
  ``out``, its ``budget`` -> the run step's);
- ``do`` -> an agent step: ``agent`` -> ``family`` (no agent: ``--default-family``), ``after``
  plus the steps its references read -> ``deps``, ``attempts`` (default 2, as in the
  reference, which retries every failure) -> ``retry`` over every failure class;
- ``ensure: [{expr}]`` -> CEL (``stratum_expr``); ``{judged}`` -> a judged ensure of the
  ``judge`` family (``--executor judge=SPEC``);
- ``gate: {on_approve, on_revise, on_kill, max_rounds}`` -> a human gate; the flow's
  ``max_rounds`` -> the plan's;
- ``fanout`` -> a fan-out whose stages become its chain (``<id>.stage<k>``): ``require`` ->
  ``join`` (``N`` -> ``quorum:N``), ``concurrency``, ``isolation``; an item list given by
  reference activates at most ``MAX_FANOUT_ITEMS`` items (ponder reserves the worst case);
- the entry flow's ``output: {from, contract}`` -> a final ``set`` step ``<entry>:output``
  checked by the contract (the run's last output);
- ``budget: {usd, tokens, dispatches, ms}`` -> ``{usd, tokens, calls, wall_ms}``.
- the reference dispatches every ready step of a flow at once (list order is never a
  dependency): when two steps of the entry flow or of one sub-flow are independent, the plan's
  ``concurrency`` is the most that can be ready together in any one of them (at most the step
  count less the longest chain of deps and forward routes, plus one; capped at
  ``MAX_PLAN_CONCURRENCY``).

- ``when`` -> ``when`` (CEL; the steps it reads join the deps), on a step of any flow; a
  ``gate`` in a sub-flow is a human gate in that flow's body.

Refused with a code naming the key: ``when`` on a fan-out stage, ``evaluate``, a
consumer-dispatched fan-out, ``pre_merge``, ``on_fail`` on a fan-out, enum contract types, an
optional field in the entry output's contract, and any expression or reference
``stratum_expr`` cannot translate exactly. ``x-*`` keys pass through (``x-sim`` scripts).

``run_args`` holds ``--arg`` values to the entry flow's declared ``input`` (typed from JSON text
where the type is not ``string``) before a run opens.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from workflows.plan.errors import PlanError, join_path
from workflows.plan.expressions import MAX_PLAN_EXPRESSION_CHARS, MAX_PLAN_EXPRESSIONS
from workflows.plan.flows import MAX_WITH_DEPTH
from workflows.plan.model import FAILURE_CLASSES, MAX_PLAN_CONCURRENCY
from workflows.plan.note_codes import note
from workflows.plan.stratum_expr import (
    ExprError,
    ExprSite,
    reference_steps,
    translate_expression,
    translate_template,
)

__all__ = [
    "FORM",
    "JUDGE_FAMILY",
    "MAX_FANOUT_ITEMS",
    "StratumMapping",
    "fanned_inputs",
    "fanout_notes",
    "is_stratum",
    "map_stratum",
    "run_args",
]

FORM = "stratum/v1"
JUDGE_FAMILY = "judge"
MAX_FANOUT_ITEMS = 100
DEFAULT_ATTEMPTS = 2
TOP_KEYS = {"version", "contracts", "flows"}
FLOW_KEYS = {"input", "output", "budget", "max_rounds", "steps"}
CONSTRUCTS = ("do", "set", "gate", "fanout", "run", "evaluate")
STEP_FIELDS: dict[str, set[str]] = {
    "do": {"do", "agent", "out", "ensure", "attempts", "iterate", "budget", "on_fail"},
    "set": {"set", "out", "ensure"},
    "gate": {"gate"},
    "fanout": {"fanout", "attempts", "budget", "on_fail"},
    "run": {"run", "with", "budget", "on_fail"},
    "evaluate": {"evaluate", "out"},
}
COMMON = {"id", "after", "when"}
STAGE_KEYS = {"do", "agent", "out", "ensure", "attempts", "when"}
FANOUT_KEYS = {
    "over",
    "steps",
    "concurrency",
    "isolation",
    "require",
    "merge",
    "pre_merge",
    "dispatch",
}
GATE_KEYS = {"on_approve", "on_revise", "on_kill", "max_rounds"}
BUDGET_KEYS = {"usd": "usd", "tokens": "tokens", "dispatches": "calls", "ms": "wall_ms"}
ENUM_CHARS = set("|()")
_INPUT_OVER = re.compile(r"\$\{input\.([A-Za-z_][A-Za-z0-9_]*)\}")
_STEPS_READ = re.compile(r'steps\["([a-z][a-z0-9_-]*)"\]')


@dataclass
class StratumMapping:
    doc: dict[str, Any]
    errors: list[PlanError] = field(default_factory=list)
    paths: dict[str, str] = field(default_factory=dict)
    """Path in the mapped document -> path in the stratum document."""


def is_stratum(raw: Mapping[str, Any]) -> bool:
    """A stratum flow: ``version`` or ``flows``, no ``schema`` (ponder's forms name theirs)."""
    return "schema" not in raw and ("version" in raw or "flows" in raw)


def _err(m: StratumMapping, code: str, path: str, message: str) -> None:
    m.errors.append(PlanError(code, path, message))


def _unsupported(m: StratumMapping, path: str, what: str, fix: str) -> None:
    _err(m, "stratum.unsupported", path, f"{what}; fix: {fix}")


def _vendor(source: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in source.items() if isinstance(k, str) and k.startswith("x-")}


def _budget(m: StratumMapping, value: Any, new: str, where: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        _err(m, "field.type", where, "budget must be a mapping; fix: {dispatches: N, ...}")
        return None
    out: dict[str, Any] = {}
    m.paths[new] = where
    for key, item in value.items():
        if key not in BUDGET_KEYS:
            _err(
                m,
                "field.unknown",
                join_path(where, str(key)),
                f"budget takes {', '.join(BUDGET_KEYS)}; fix: remove {key!r}",
            )
            continue
        out[BUDGET_KEYS[key]] = item
        m.paths[join_path(new, BUDGET_KEYS[key])] = join_path(where, key)
    return out


def _contract_type(text: Any) -> bool:
    """Whether ponder's contract types say what this stratum type says (enums they cannot)."""
    return isinstance(text, str) and not (ENUM_CHARS & set(text))


def _contracts(m: StratumMapping, raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        _err(m, "field.type", "contracts", "contracts must be a mapping of name -> fields")
        return {}
    for name, fields in raw.items():
        for fname, ftype in fields.items() if isinstance(fields, dict) else []:
            if not _contract_type(ftype):
                _unsupported(
                    m,
                    join_path("contracts", str(name), str(fname)),
                    f"contract type {ftype!r} (an enum) has no ponder contract type",
                    "use string, number, integer, boolean, object, array or a contract name",
                )
    m.paths["contracts"] = "contracts"
    return raw


class _FlowMapper:
    """One flow's steps, mapped in order (fan-out stages become the steps after their fan-out)."""

    def __init__(
        self, m: StratumMapping, name: str, flow: Mapping[str, Any], doc_flows: Mapping[str, Any]
    ) -> None:
        self.m = m
        self.name = name
        self.flow = flow
        self.flows = doc_flows
        self.steps: list[dict[str, Any]] = []
        self.base = ""  # "" at the top level, "flows.<name>." for a body

    def path(self, *parts: str | int) -> str:
        return join_path(f"flows.{self.name}", *parts)

    def new(self, i: int, *parts: str | int) -> str:
        return join_path(f"{self.base}steps[{i}]", *parts)

    def template(self, text: Any, where: str, site: ExprSite) -> Any:
        if not isinstance(text, str):
            return text  # the model reports the type at the mapped path
        try:
            return translate_template(text, site)
        except ExprError as exc:
            _err(
                self.m,
                "stratum.reference",
                where,
                f"{exc}; fix: use ${{input.<field>}}, "
                "${<step>.output[.path]}, or ${item}/${prev} in a fan-out stage",
            )
            return "-"  # reported above: nothing else is said about this value

    def ensures(self, raw: Any, new: str, where: str, site: ExprSite) -> list[Any]:
        if raw is None:
            return []
        if not isinstance(raw, list):
            return raw  # type: ignore[no-any-return]  # the model reports it
        out: list[Any] = []
        for k, entry in enumerate(raw):
            at = join_path(where, k)
            if isinstance(entry, dict) and set(entry) == {"expr"}:
                try:
                    done = translate_expression(entry["expr"], site)
                except ExprError as exc:
                    _err(
                        self.m,
                        "stratum.expression",
                        join_path(at, "expr"),
                        f"{exc}; fix: "
                        "write it with len, matches, ==, comparisons, && || ! and paths",
                    )
                    continue
                for check in done.files:
                    m_at = join_path(new, len(out))
                    self.m.paths[m_at] = join_path(at, "expr")
                    out.append(check)
                if done.cel is not None:
                    self.m.paths[join_path(new, len(out))] = join_path(at, "expr")
                    out.append({"expr": done.cel})
            elif isinstance(entry, dict) and set(entry) == {"judged"}:
                judged = entry["judged"]
                self.m.paths[join_path(new, len(out))] = at
                if isinstance(judged, dict):
                    judged = {"model": JUDGE_FAMILY, **judged}
                out.append({"judged": judged})
            else:
                self.m.paths[join_path(new, len(out))] = at
                out.append(entry)  # file_exists / file_contains are ponder's forms too
        return out

    def deps(self, step: Mapping[str, Any], texts: list[Any]) -> list[Any]:
        after = step.get("after", [])
        deps = list(after) if isinstance(after, list) else after
        if not isinstance(deps, list):
            return deps  # type: ignore[no-any-return]
        for text in texts:
            for ref in reference_steps(text) if isinstance(text, str) else []:
                if ref not in deps:
                    deps.append(ref)
        return deps

    def map_steps(self, *, top: bool) -> list[dict[str, Any]]:
        raw = self.flow.get("steps")
        if not isinstance(raw, list):
            _err(self.m, "field.type", self.path("steps"), "steps must be a list of steps")
            return []
        for j, step in enumerate(raw):
            where = self.path("steps", j)
            if not isinstance(step, dict):
                _err(self.m, "document.not_object", where, "a step must be a mapping")
                continue
            self.step(step, where, top=top)
        return self.steps

    def step(self, step: dict[str, Any], where: str, *, top: bool) -> None:
        kinds = [c for c in CONSTRUCTS if c in step]
        if len(kinds) != 1:
            _err(
                self.m,
                "stratum.construct",
                where,
                "a step has exactly one of "
                f"{', '.join(CONSTRUCTS)} (found {', '.join(kinds) or 'none'}); fix: split it",
            )
            return
        kind = kinds[0]
        allowed = STEP_FIELDS[kind] | COMMON
        for key in step:
            if key not in allowed and not str(key).startswith("x-"):
                _err(
                    self.m,
                    "field.unknown",
                    join_path(where, str(key)),
                    f"{key!r} is not a field of a {kind} step; fix: remove it",
                )
        if kind == "evaluate":
            _unsupported(
                self.m,
                join_path(where, "evaluate"),
                "evaluate steps do not run in ponder",
                "run the command in an agent step",
            )
            return
        i = len(self.steps)
        self.m.paths[self.new(i)] = where
        self.m.paths[self.new(i, "id")] = join_path(where, "id")
        self.m.paths[self.new(i, "deps")] = join_path(where, "after")
        out: dict[str, Any] = {"id": step.get("id"), **_vendor(step)}
        if kind == "do":
            self.do_step(out, step, where, i, ExprSite())
        elif kind == "set":
            self.set_step(out, step, where, i)
        elif kind == "gate":
            self.gate_step(out, step, where, i)
        elif kind == "run":
            self.run_step(out, step, where, i)
        else:
            self.steps.append(out)  # the fan-out first, its stages after it
            self.fanout_step(out, step, where, i)
            self.condition(out, step, where, i)
            return
        self.condition(out, step, where, i)
        self.steps.append(out)

    def condition(self, out: dict[str, Any], step: Mapping[str, Any], where: str, i: int) -> None:
        """``when`` -> ``when`` in CEL; the steps it reads become deps (as references do)."""
        if "when" not in step:
            return
        at = join_path(where, "when")
        self.m.paths[self.new(i, "when")] = at
        try:
            cel = translate_expression(step["when"], ExprSite(result="steps"), predicate=False).cel
        except ExprError as exc:
            _err(self.m, "stratum.expression", at, f"{exc}")
            return
        out["when"] = cel
        deps = out.get("deps")
        if isinstance(deps, list) and cel is not None:
            out["deps"] = deps + [s for s in _steps_read(cel) if s not in deps]

    def do_step(
        self, out: dict[str, Any], step: Mapping[str, Any], where: str, i: int, site: ExprSite
    ) -> None:
        out["kind"] = "agent"
        out["prompt"] = self.template(step.get("do"), join_path(where, "do"), site)
        self.m.paths[self.new(i, "prompt")] = join_path(where, "do")
        out["deps"] = self.deps(step, [step.get("do")])
        if "agent" in step:
            out["family"] = step["agent"]
            self.m.paths[self.new(i, "family")] = join_path(where, "agent")
        for key in ("out", "on_fail"):
            if key in step:
                out[key] = step[key]
                self.m.paths[self.new(i, key)] = join_path(where, key)
        attempts = step.get("attempts", DEFAULT_ATTEMPTS)
        out["retry"] = {"max_attempts": attempts, "on": list(FAILURE_CLASSES)}
        out["idempotent"] = True  # the reference retries every step; so does the mapping
        self.m.paths[self.new(i, "retry")] = join_path(where, "attempts")
        self.m.paths[self.new(i, "retry", "max_attempts")] = join_path(where, "attempts")
        out["ensure"] = self.ensures(
            step.get("ensure"), self.new(i, "ensure"), join_path(where, "ensure"), site
        )
        budget = _budget(
            self.m, step.get("budget"), self.new(i, "budget"), join_path(where, "budget")
        )
        if budget is not None:
            out["budget"] = budget
        iterate = step.get("iterate")
        if isinstance(iterate, dict):
            until = iterate.get("until")
            cel: Any = until
            try:
                cel = translate_expression(until, site, predicate=False).cel
            except ExprError as exc:
                _err(self.m, "stratum.expression", join_path(where, "iterate", "until"), f"{exc}")
            out["iterate"] = {**iterate, "until": cel}
            self.m.paths[self.new(i, "iterate")] = join_path(where, "iterate")
        elif iterate is not None:
            out["iterate"] = iterate

    def set_step(self, out: dict[str, Any], step: Mapping[str, Any], where: str, i: int) -> None:
        out["kind"] = "set"
        values = step.get("set")
        reads: list[str] = []
        if isinstance(values, dict):
            mapped: dict[str, Any] = {}
            for key, text in values.items():
                at = join_path(where, "set", str(key))
                self.m.paths[self.new(i, "set", str(key))] = at
                try:
                    value = translate_expression(text, ExprSite(result="steps"), predicate=False)
                except ExprError as exc:
                    _err(self.m, "stratum.expression", at, f"{exc}")
                    mapped[key] = "null"  # reported above; keeps the step's shape valid
                    continue
                mapped[key] = value.cel
                reads += [s for s in _steps_read(value.cel) if s not in reads]
            values = mapped
        out["set"] = values
        deps = self.deps(step, [])
        out["deps"] = deps + [s for s in reads if s not in deps] if isinstance(deps, list) else deps
        if "out" in step:
            out["out"] = step["out"]
            self.m.paths[self.new(i, "out")] = join_path(where, "out")
        out["ensure"] = self.ensures(
            step.get("ensure"), self.new(i, "ensure"), join_path(where, "ensure"), ExprSite()
        )

    def gate_step(self, out: dict[str, Any], step: Mapping[str, Any], where: str, i: int) -> None:
        out["kind"] = "gate"
        out["deps"] = self.deps(step, [])
        gate = step.get("gate")
        if isinstance(gate, dict):
            for key in gate:
                if key not in GATE_KEYS:
                    _err(
                        self.m,
                        "field.unknown",
                        join_path(where, "gate", str(key)),
                        f"a gate takes {', '.join(sorted(GATE_KEYS))}; fix: remove {key!r}",
                    )
        out["gate"] = gate
        self.m.paths[self.new(i, "gate")] = join_path(where, "gate")

    def run_step(self, out: dict[str, Any], step: Mapping[str, Any], where: str, i: int) -> None:
        out["kind"] = "run"
        out["flow"] = step.get("run")
        self.m.paths[self.new(i, "flow")] = join_path(where, "run")
        with_ = step.get("with", {})
        texts: list[Any] = []
        if isinstance(with_, dict):
            with_ = {
                k: self._with_value(v, join_path(where, "with", str(k)), texts)
                for k, v in with_.items()
            }
        out["with"] = with_
        self.m.paths[self.new(i, "with")] = join_path(where, "with")
        out["deps"] = self.deps(step, texts)
        name = step.get("run")
        callee = self.flows.get(name) if isinstance(name, str) else None
        own = _budget(self.m, step.get("budget"), self.new(i, "budget"), join_path(where, "budget"))
        theirs = callee.get("budget") if isinstance(callee, dict) else None
        if isinstance(theirs, dict):
            mapped = {BUDGET_KEYS[k]: v for k, v in theirs.items() if k in BUDGET_KEYS}
            own = {k: min(v, own[k]) if own and k in own else v for k, v in mapped.items()} | {
                k: v for k, v in (own or {}).items() if k not in mapped
            }
        if own:
            out["budget"] = own
        output = callee.get("output") if isinstance(callee, dict) else None
        if isinstance(output, dict) and isinstance(output.get("contract"), str):
            out["out"] = output["contract"]
            self.m.paths[self.new(i, "out")] = f"flows.{step.get('run')}.output.contract"
        if "on_fail" in step:
            out["on_fail"] = step["on_fail"]
            self.m.paths[self.new(i, "on_fail")] = join_path(where, "on_fail")

    def _with_value(self, value: Any, where: str, texts: list[Any], depth: int = 0) -> Any:
        if depth > MAX_WITH_DEPTH:
            return value  # ponder refuses it (flow.with_too_deep) at this path
        if isinstance(value, str):
            texts.append(value)
            return self.template(value, where, ExprSite())
        if isinstance(value, list):
            return [
                self._with_value(v, join_path(where, k), texts, depth + 1)
                for k, v in enumerate(value)
            ]
        if isinstance(value, dict):
            return {
                k: self._with_value(v, join_path(where, str(k)), texts, depth + 1)
                for k, v in value.items()
            }
        return value

    def fanout_step(self, out: dict[str, Any], step: Mapping[str, Any], where: str, i: int) -> None:
        out["kind"] = "fanout"
        spec = step.get("fanout")
        at = join_path(where, "fanout")
        if not isinstance(spec, dict):
            out["fanout"] = spec
            return
        for key in spec:
            if key not in FANOUT_KEYS:
                _err(
                    self.m,
                    "field.unknown",
                    join_path(at, str(key)),
                    f"{key!r} is not a fanout field; fix: remove it",
                )
        if spec.get("dispatch", "engine") != "engine":
            _unsupported(
                self.m,
                join_path(at, "dispatch"),
                "a consumer-dispatched fan-out does not run in ponder",
                "drop dispatch, or use a consumer agent step",
            )
        if spec.get("pre_merge"):
            _unsupported(
                self.m,
                join_path(at, "pre_merge"),
                "pre_merge commands do not run in ponder",
                "check the merged workspace in a later step",
            )
        if spec.get("merge", "sequential") != "sequential":
            _err(self.m, "field.choice", join_path(at, "merge"), "merge is sequential")
        if "on_fail" in step:
            _unsupported(
                self.m,
                join_path(where, "on_fail"),
                "on_fail on a fan-out does not run in ponder (the join decides)",
                "use require: any or a quorum",
            )
        stages = spec.get("steps")
        over = self.template(spec.get("over"), join_path(at, "over"), ExprSite())
        fan: dict[str, Any] = {"over": over, "chain": []}
        self.m.paths[self.new(i, "fanout")] = at
        self.m.paths[self.new(i, "fanout", "over")] = join_path(at, "over")
        if isinstance(over, str):
            fan["max_fanout"] = MAX_FANOUT_ITEMS
        concurrency = spec.get("concurrency")
        if isinstance(concurrency, int) and not isinstance(concurrency, bool):
            concurrency = (
                min(concurrency, MAX_FANOUT_ITEMS) if isinstance(over, str) else concurrency
            )
        if concurrency is not None:
            fan["concurrency"] = concurrency
            self.m.paths[self.new(i, "fanout", "concurrency")] = join_path(at, "concurrency")
        require = spec.get("require", "all")
        fan["join"] = f"quorum:{require}" if isinstance(require, int) else require
        self.m.paths[self.new(i, "fanout", "join")] = join_path(at, "require")
        if "isolation" in spec:
            fan["isolation"] = spec["isolation"]
            self.m.paths[self.new(i, "fanout", "isolation")] = join_path(at, "isolation")
        out["fanout"] = fan
        texts: list[Any] = [spec.get("over")]
        budget = _budget(
            self.m, step.get("budget"), self.new(i, "budget"), join_path(where, "budget")
        )
        if budget is not None:
            out["budget"] = budget
        if not isinstance(stages, list) or not stages:
            _err(self.m, "field.missing", join_path(at, "steps"), "a fanout needs steps: [...]")
            out["deps"] = self.deps(step, texts)
            return
        prev: str | None = None
        for k, stage in enumerate(stages):
            s_at = join_path(at, "steps", k)
            if not isinstance(stage, dict):
                _err(self.m, "document.not_object", s_at, "a fanout stage must be a mapping")
                continue
            for key in stage:
                if key not in STAGE_KEYS and not str(key).startswith("x-"):
                    _err(
                        self.m,
                        "field.unknown",
                        join_path(s_at, str(key)),
                        f"{key!r} is not a fanout stage field; fix: remove it",
                    )
            if "when" in stage:
                _unsupported(
                    self.m,
                    join_path(s_at, "when"),
                    "conditional stages (when) do not run in ponder",
                    "drop when",
                )
            member_id = f"{step.get('id')}.stage{k}"
            fan["chain"].append(member_id)
            j = len(self.steps)
            self.m.paths[self.new(j)] = s_at
            member: dict[str, Any] = {"id": member_id, **_vendor(stage)}
            site = ExprSite(item=True, prev=prev)
            attempts = stage.get("attempts", step.get("attempts", DEFAULT_ATTEMPTS))
            self.do_step(member, {**stage, "attempts": attempts}, s_at, j, site)
            # A stage's references to steps outside the fan-out are the fan-out's deps (a chain
            # member depends only on earlier members or what precedes its fan-out).
            texts.append(stage.get("do"))
            member["deps"] = []
            self.steps.append(member)
            prev = member_id
        deps = self.deps(step, texts)
        out["deps"] = [d for d in deps if d not in fan["chain"]] if isinstance(deps, list) else deps


def _steps_read(cel: str | None) -> list[str]:
    """The ids a translated CEL text reads as ``steps["<id>"]`` (set values' dependencies)."""
    return _STEPS_READ.findall(cel or "")


def _flow_output(
    m: StratumMapping, name: str, flow: Mapping[str, Any]
) -> tuple[str | None, list[str]]:
    """The ``from`` reference as ponder's ``${steps.<id>.output...}`` and the steps it reads."""
    output = flow.get("output")
    where = f"flows.{name}.output"
    if not isinstance(output, dict) or not isinstance(output.get("from"), str):
        _err(m, "field.missing", where, "a flow needs output: {from: ${<step>.output}, contract}")
        return None, []
    for key in output:
        if key not in ("from", "contract"):
            _err(m, "field.unknown", join_path(where, str(key)), "output takes from and contract")
    try:
        text = translate_template(output["from"], ExprSite())
    except ExprError as exc:
        _err(m, "stratum.reference", join_path(where, "from"), f"{exc}")
        return None, []
    return text, reference_steps(output["from"])


def _entry_output(
    m: StratumMapping,
    name: str,
    flow: Mapping[str, Any],
    contracts: Mapping[str, Any],
    taken: set[str],
) -> dict[str, Any] | None:
    """The entry flow's output as a final ``set`` step checked by its contract."""
    text, reads = _flow_output(m, name, flow)
    if text is None:
        return None
    where = f"flows.{name}.output"
    contract = flow["output"].get("contract")
    fields = contracts.get(contract) if isinstance(contract, str) else None
    if not isinstance(fields, dict):
        _err(
            m,
            "contract.unknown",
            join_path(where, "contract"),
            f"output contract {contract!r} names no contract; fix: declare it under contracts",
        )
        return None
    ref = text[len("${steps.") : -1] if text.startswith("${steps.") and text.endswith("}") else ""
    head, _, rest = ref.partition(".output")
    if not head or text.count("${") != 1:
        _err(
            m,
            "stratum.reference",
            join_path(where, "from"),
            "a flow's output is one ${<step>.output[.path]}; fix: name one step's output",
        )
        return None
    base = f'steps["{head}"]' + "".join(
        f"[{p}]" if p.isdigit() else f".{p}" for p in rest.split(".") if p
    )
    values = {}
    for fname, ftype in fields.items():
        if isinstance(ftype, str) and ftype.endswith("?"):
            _unsupported(
                m,
                join_path("contracts", contract, str(fname)),
                "an optional field in the entry flow's output contract has no exact translation",
                "make the field required",
            )
            return None
        values[fname] = f"{base}.{fname}"
    sid = f"{name}:output"
    while sid in taken:
        sid += "_"
    return {"id": sid, "kind": "set", "deps": reads, "set": values, "out": contract}


def _widest(steps: list[dict[str, Any]]) -> int:
    """How many of the mapped top-level steps may be ready at once: the steps less the longest
    chain through deps and forward routes, plus one (no more steps than that can be pairwise
    independent). A fan-out's chain members run inside it and are not counted; a dep on a later
    step is ignored (validation refuses it), so one pass in plan order finds every chain."""
    members = {
        m for s in steps if isinstance(s.get("fanout"), dict) for m in s["fanout"].get("chain", [])
    }
    order = [s for s in steps if isinstance(s.get("id"), str) and s["id"] not in members]
    before: dict[str, set[str]] = {s["id"]: set() for s in order}
    for step in order:
        deps = step.get("deps")
        before[step["id"]] |= {d for d in deps if d in before} if isinstance(deps, list) else set()
        gate = step.get("gate")
        gate = gate if isinstance(gate, dict) else {}
        for target in (step.get("on_fail"), gate.get("on_approve"), gate.get("on_kill")):
            if isinstance(target, str) and target in before:
                before[target].add(step["id"])
    longest: dict[str, int] = {}
    for step in order:  # a dep not yet counted is later in the plan: refused, so not a chain
        longest[step["id"]] = 1 + max(
            (longest[d] for d in before[step["id"]] if d in longest), default=0
        )
    chain = max(longest.values(), default=0)
    return min(MAX_PLAN_CONCURRENCY, len(order) - chain + 1)


def map_stratum(raw: Mapping[str, Any]) -> StratumMapping:
    m = StratumMapping(doc={"schema": "ponder-plan/1"})
    for key in raw:
        if key not in TOP_KEYS and not str(key).startswith("x-"):
            _err(
                m,
                "field.unknown",
                join_path("", str(key)),
                f"{key!r} is not a stratum flow "
                "field ponder accepts (version, contracts, flows); fix: remove it",
            )
    if raw.get("version") != 1 or isinstance(raw.get("version"), bool):
        _err(
            m,
            "stratum.version",
            "version",
            f"version {raw.get('version')!r} is not a stratum "
            "flow version ponder reads; fix: version: 1",
        )
    m.doc.update(_vendor(raw))
    too_many = _expression_budget(raw.get("flows"))
    if too_many is not None:  # refused before a single expression is parsed
        m.errors.append(too_many)
        return m
    contracts = _contracts(m, raw.get("contracts"))
    m.doc["contracts"] = contracts
    flows = raw.get("flows")
    if not isinstance(flows, dict):
        _err(m, "field.type", "flows", "flows must be a mapping: {entry: NAME, NAME: {...}}")
        return m
    entry = flows.get("entry")
    bodies = {k: v for k, v in flows.items() if k != "entry"}
    if not isinstance(entry, str) or entry not in bodies:
        _err(
            m,
            "stratum.entry",
            "flows.entry",
            f"entry {entry!r} names no flow; fix: "
            f"entry: one of {', '.join(map(str, bodies)) or '(none)'}",
        )
        return m
    for name, flow in bodies.items():
        if not isinstance(flow, dict):
            _err(m, "document.not_object", f"flows.{name}", "a flow must be a mapping")
            continue
        for key in flow:
            if key not in FLOW_KEYS and not str(key).startswith("x-"):
                _err(
                    m,
                    "field.unknown",
                    join_path(f"flows.{name}", str(key)),
                    f"{key!r} is not a flow field ponder accepts; fix: remove it",
                )
    main = bodies[entry]
    if not isinstance(main, dict):
        return m
    m.doc["name"] = entry
    m.paths["name"] = "flows.entry"
    if "max_rounds" in main:
        m.doc["max_rounds"] = main["max_rounds"]
        m.paths["max_rounds"] = f"flows.{entry}.max_rounds"
    budget = _budget(m, main.get("budget"), "budget", f"flows.{entry}.budget")
    if budget is not None:
        m.doc["budget"] = budget
    m.doc["x-stratum"] = {"entry": entry, "input": main.get("input"), "output": main.get("output")}
    top = _FlowMapper(m, entry, main, bodies)
    steps = top.map_steps(top=True)
    final = _entry_output(m, entry, main, contracts, {str(s.get("id")) for s in steps})
    if final is not None:
        m.paths[f"steps[{len(steps)}]"] = f"flows.{entry}.output"
        steps.append(final)
    m.doc["steps"] = steps
    width, widest_at = _widest(steps), f"flows.{entry}.steps"
    out_flows: dict[str, Any] = {}
    for name, flow in bodies.items():
        if name == entry or not isinstance(flow, dict):
            continue
        body = _FlowMapper(m, name, flow, bodies)
        body.base = f"flows.{name}."
        m.paths[f"flows.{name}"] = f"flows.{name}"
        mapped: dict[str, Any] = {"steps": body.map_steps(top=False), **_vendor(flow)}
        if "input" in flow:
            mapped["input"] = flow["input"]
            m.paths[f"flows.{name}.input"] = f"flows.{name}.input"
        output, _ = _flow_output(m, name, flow)
        if output is not None:
            mapped["output"] = output
            m.paths[f"flows.{name}.output"] = f"flows.{name}.output.from"
        out_flows[name] = mapped
        if (body_width := _widest(mapped["steps"])) > width:  # a body overlaps its steps too
            width, widest_at = body_width, f"flows.{name}.steps"
    if width > 1:
        m.doc["concurrency"] = width
        m.paths["concurrency"] = widest_at
    if out_flows:
        m.doc["flows"] = out_flows
    return m


def run_args(plan: Mapping[str, Any], args: Mapping[str, str]) -> dict[str, Any]:
    """``--arg`` values for a translated stratum flow: each must be declared by the entry flow's
    ``input`` (all but optional ones given), and a non-string input takes its value as JSON text
    (``--arg items='["a", "b"]'``), as the reference's typed input would hold it. Raises
    ``ValueError`` naming the input; a plan that is not a stratum flow takes ``args`` as given."""
    origin = plan.get("x-stratum")
    declared = origin.get("input") if isinstance(origin, dict) else None
    if not isinstance(declared, dict):
        return dict(args)
    out: dict[str, Any] = {}
    for key, value in args.items():
        kind = declared.get(key)
        if not isinstance(kind, str):
            raise ValueError(
                f"--arg {key}: the flow declares no input {key!r} "
                f"(its inputs: {', '.join(declared) or 'none'}); fix: drop it"
            )
        if kind.rstrip("?") == "string":
            out[key] = value
            continue
        try:
            out[key] = json.loads(value, parse_constant=_not_json)
        except ValueError:
            raise ValueError(
                f"--arg {key}: the input is declared {kind}, so its value is JSON text "
                f'(got {value[:60]!r}); fix: e.g. --arg {key}=\'["a", "b"]\''
            ) from None
    for key in fanned_inputs(plan):
        if isinstance(out.get(key), list) and len(out[key]) > MAX_FANOUT_ITEMS:
            raise ValueError(
                f"--arg {key}: {len(out[key])} items, and a fan-out over it runs at most "
                f"{MAX_FANOUT_ITEMS} (ponder bounds a run's history); fix: split the list "
                "over several runs"
            )
    missing = [k for k, t in declared.items() if k not in args and not str(t).endswith("?")]
    if missing:
        raise ValueError(
            f"the flow's input {', '.join(missing)} is required; fix: "
            + " ".join(f"--arg {k}=VALUE" for k in missing)
        )
    return out


def _not_json(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")


def _expressions(flows: Any) -> Any:
    """Every expression text of the flows (ensure, set, iterate.until, fan-out stages)."""
    for flow in flows.values() if isinstance(flows, dict) else []:
        steps = flow.get("steps") if isinstance(flow, dict) else None
        for step in steps if isinstance(steps, list) else []:
            if not isinstance(step, dict):
                continue
            fanout = step.get("fanout")
            stages = fanout.get("steps") if isinstance(fanout, dict) else None
            for owner in [step, *(stages if isinstance(stages, list) else [])]:
                if not isinstance(owner, dict):
                    continue
                ensure = owner.get("ensure")
                for entry in ensure if isinstance(ensure, list) else []:
                    if isinstance(entry, dict) and isinstance(entry.get("expr"), str):
                        yield entry["expr"]
                values = owner.get("set")
                yield from (
                    (v for v in (values or {}).values() if isinstance(v, str))
                    if isinstance(values, dict)
                    else ()
                )
                iterate = owner.get("iterate")
                if isinstance(iterate, dict) and isinstance(iterate.get("until"), str):
                    yield iterate["until"]


def _expression_budget(flows: Any) -> PlanError | None:
    """Ponder's plan-wide ceiling on distinct expressions, held before any is translated (the
    translation also runs in the workflow's first task)."""
    texts = set(_expressions(flows))
    chars = sum(len(t) for t in texts)
    if len(texts) <= MAX_PLAN_EXPRESSIONS and chars <= MAX_PLAN_EXPRESSION_CHARS:
        return None
    return PlanError(
        "expr.too_complex",
        "flows",
        f"the flows have {len(texts)} distinct expressions of {chars} characters, over "
        f"{MAX_PLAN_EXPRESSIONS} expressions or {MAX_PLAN_EXPRESSION_CHARS} characters; "
        "fix: reuse expressions or split the flows",
    )


def fanned_inputs(plan: Mapping[str, Any]) -> list[str]:
    """The inputs a translated flow's fan-outs run over directly (``over: ${input.<key>}``)."""
    keys = []
    for step in plan.get("steps") or []:
        fan = step.get("fanout") if isinstance(step, dict) else None
        over = fan.get("over") if isinstance(fan, dict) else None
        match = _INPUT_OVER.fullmatch(over) if isinstance(over, str) else None
        if match is not None and match.group(1) not in keys:
            keys.append(match.group(1))
    return keys


def fanout_notes(plan: Mapping[str, Any]) -> list[str]:
    """What validation tells the author of a translated flow's fan-outs over a reference."""
    notes = []
    for step in plan.get("steps") or []:
        fan = step.get("fanout") if isinstance(step, dict) else None
        if isinstance(fan, dict) and isinstance(fan.get("over"), str):
            notes.append(
                note(
                    "fanout-items-capped",
                    f"fan-out {step.get('id')} runs at most the first {MAX_FANOUT_ITEMS} items "
                    f"of {fan['over']} (ponder bounds a run's history); ponder plan run refuses "
                    "a longer --arg list",
                )
            )
    return notes
