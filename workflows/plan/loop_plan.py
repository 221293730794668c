"""Map a ``loop-plan/1`` document (the reference's camelCase form) onto ``ponder-plan/1``.

Pure, and raw dict to raw dict: the result is validated by the same model and rules as a
``ponder-plan/1`` document. The mapping (docs/plans.md): ``stepId`` -> ``id``; ``gates[]``,
``pauses[]``, ``fanouts[]``, ``joins[]`` fold into their steps; ``failRoute``/``maxRedos`` ->
``fail_route``/``max_redos``; ``retry.maxAttempts``/``retryableFailureClasses`` ->
``retry.max_attempts``/``on``; ``budget.maxAgents`` -> ``max_agents``; ``x-role: qe`` -> ``role:
qe``; ``pauseState`` + ``pauses[].resumeArg`` -> ``pause``; ``fanouts[].registry/maxFanout/chain``
-> ``over/max_fanout/chain``; ``joins[].joinPolicy`` -> ``join``. A ``join`` step disappears
into its fan-out (deps on it become deps on the fan-out). ``phase`` is kept as ``x-phase``,
``whenToUse`` and ``trace.emit`` in the plan's ``loop_plan`` origin.

Every path the mapping writes is remembered, so an error found later in the mapped document is
reported at the path the author wrote (``fanouts[0].registry``, not ``steps[4].fanout.over``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from workflows.plan.errors import PlanError, join_path

__all__ = ["LoopMapping", "map_loop_plan", "translate"]

TOP_KEYS = {"schema", "name", "description", "whenToUse", "trace", "steps"}
FOLD_KEYS = ("gates", "pauses", "fanouts", "joins")
STEP_RENAMES = {"stepId": "id", "phase": "x-phase", "x-role": "role"}
FOLD_FIELDS = {
    "gates": {"stepId", "kind", "failRoute", "maxRedos"},
    "pauses": {"state", "resumeArg"},
    "fanouts": {"stage", "registry", "maxFanout", "overflow", "dedup", "chain"},
    "joins": {"stage", "forStage", "joinPolicy", "onInvalid"},
}
PART2_LOOP_TOP = {"flows"}
PART2_LOOP_KINDS = {"run"}
PART2_LOOP_BUDGET = {"calls", "tokens", "usd", "wall_ms"}
# Values the reference allows that ponder's part 1 implements exactly one way.
ONLY_VALUE = {("fanouts", "overflow"): "window", ("joins", "onInvalid"): "named-failure"}
# The newer plan features are ponder-plan/1 only: loop.unsupported in this form.
PONDER_ONLY_KINDS = {"set"}
PONDER_ONLY_STEP_KEYS = {"ensure", "iterate", "set"}


@dataclass
class LoopMapping:
    doc: dict[str, Any]
    errors: list[PlanError] = field(default_factory=list)
    paths: dict[str, str] = field(default_factory=dict)
    """Path in the mapped document -> path in the loop-plan/1 document."""


def translate(path: str, paths: Mapping[str, str]) -> str:
    """Rewrite a mapped-document path to the author's, by its longest recorded prefix."""
    best = ""
    for prefix in paths:
        if len(prefix) > len(best) and (
            path == prefix or path.startswith((prefix + ".", prefix + "["))
        ):
            best = prefix
    return paths[best] + path[len(best) :] if best else path


def _err(m: LoopMapping, code: str, path: str, message: str) -> None:
    m.errors.append(PlanError(code, path, message))


def _fold_index(m: LoopMapping, raw: Mapping[str, Any], key: str, by: str) -> dict[str, int]:
    """``gates[]`` etc. indexed by the step they fold into; malformed entries are reported."""
    entries = raw.get(key, [])
    out: dict[str, int] = {}
    if not isinstance(entries, list):
        _err(m, "field.type", key, f"{key} must be a list; fix: write {key}: [...]")
        return out
    for k, entry in enumerate(entries):
        where = join_path(key, k)
        if not isinstance(entry, dict):
            _err(m, "document.not_object", where, f"{where} must be a mapping; fix: write {{...}}")
            continue
        for name in entry:
            if name not in FOLD_FIELDS[key] and not str(name).startswith("x-"):
                _err(
                    m,
                    "field.unknown",
                    join_path(where, str(name)),
                    f"{name!r} is not a loop-plan/1 {key} field ponder accepts; fix: remove it "
                    f"(accepted: {', '.join(sorted(FOLD_FIELDS[key]))})",
                )
        for (fold, name), only in ONLY_VALUE.items():
            if fold == key and name in entry and entry[name] != only:
                _err(
                    m,
                    "loop.unsupported",
                    join_path(where, name),
                    f"{name}={entry[name]!r} is not supported; fix: use {only!r} "
                    "(the only behaviour ponder implements)",
                )
        target = entry.get(by)
        if not isinstance(target, str):
            _err(
                m,
                "field.missing",
                join_path(where, by),
                f"{by} (a string) is required; fix: add it",
            )
            continue
        if target in out:
            _err(
                m,
                "loop.fold_duplicate",
                join_path(where, by),
                f"{key}[{out[target]}] already folds into {target!r}; fix: merge the entries",
            )
            continue
        out[target] = k
    return out


def _part2_only(m: LoopMapping, source: Mapping[str, Any], where: str) -> None:
    """The newer plan features are ``ponder-plan/1`` only (docs/plans.md)."""
    kind = source.get("kind")
    if isinstance(kind, str) and kind in PART2_LOOP_KINDS:
        _err(
            m,
            "loop.unsupported",
            join_path(where, "kind"),
            f"kind {kind!r} is a ponder-plan/1 feature; fix: write the plan as "
            "ponder-plan/1 to use it",
        )
    for key in ("dispatch", "checkpoint"):  # consumer steps, checkpoints (sections 7, 8)
        if key in source:
            _err(
                m,
                "loop.unsupported",
                join_path(where, key),
                f"{key!r} is a ponder-plan/1 feature; fix: write the plan as ponder-plan/1 to "
                "use it",
            )
    budget = source.get("budget")
    for key in budget if isinstance(budget, dict) else {}:
        if isinstance(key, str) and key in PART2_LOOP_BUDGET:
            _err(
                m,
                "loop.unsupported",
                join_path(where, "budget", str(key)),
                f"budget.{key} (a nested ledger) is a ponder-plan/1 feature; fix: write the plan "
                "as ponder-plan/1 to use it",
            )


def map_loop_plan(raw: Mapping[str, Any]) -> LoopMapping:
    m = LoopMapping(doc={"schema": "ponder-plan/1"})
    for key in raw:
        if key in TOP_KEYS or key in FOLD_KEYS or str(key).startswith("x-"):
            continue
        if isinstance(key, str) and key in PART2_LOOP_TOP:
            _err(
                m,
                "loop.unsupported",
                join_path("", str(key)),
                f"{key!r} is a ponder-plan/1 feature; fix: write the plan as ponder-plan/1",
            )
            continue
        if key == "subsystems":  # the reference's opt-ins: ours only
            _err(
                m,
                "loop.unsupported",
                "subsystems",
                "subsystems (training pairs, checkpoints) run in ponder-plan/1 plans only; fix: "
                "write the plan as ponder-plan/1 with training_pairs: true",
            )
            continue
        _err(
            m,
            "field.unknown",
            join_path("", str(key)),
            f"{key!r} is not a loop-plan/1 field ponder accepts; fix: remove it",
        )
    for key in ("name", "description"):
        if key in raw:
            m.doc[key] = raw[key]
    m.doc.update({k: v for k, v in raw.items() if str(k).startswith("x-")})
    trace = raw.get("trace", {})
    emit = False
    if isinstance(trace, dict):
        for key in trace:
            if key != "emit":
                _err(
                    m,
                    "field.unknown",
                    join_path("trace", str(key)),
                    "trace takes only emit; fix: remove the key",
                )
        emit = trace.get("emit") is True
    else:
        _err(m, "document.not_object", "trace", "trace must be a mapping; fix: trace: {emit: true}")
    origin: dict[str, Any] = {"trace_emit": emit}
    if isinstance(raw.get("whenToUse"), str):
        origin["when_to_use"] = raw["whenToUse"]
    m.doc["loop_plan"] = origin

    gates = _fold_index(m, raw, "gates", "stepId")
    fanouts = _fold_index(m, raw, "fanouts", "stage")
    joins = _fold_index(m, raw, "joins", "forStage")
    pauses = _fold_index(m, raw, "pauses", "state")
    raw_steps = raw.get("steps")
    if not isinstance(raw_steps, list):
        m.doc["steps"] = raw_steps  # the model reports it
        return m

    # A join step folds into its fan-out: later deps on it become deps on the fan-out.
    join_alias: dict[str, str] = {}
    for entry in raw.get("joins", []) if isinstance(raw.get("joins"), list) else []:
        if (
            isinstance(entry, dict)
            and isinstance(entry.get("stage"), str)
            and isinstance(entry.get("forStage"), str)
        ):
            join_alias[entry["stage"]] = entry["forStage"]

    used: dict[str, set[str]] = {k: set() for k in FOLD_KEYS}
    steps: list[Any] = []
    for j, source in enumerate(raw_steps):
        where = f"steps[{j}]"
        if not isinstance(source, dict):
            m.paths[f"steps[{len(steps)}]"] = where
            steps.append(source)
            continue
        if source.get("kind") == "join":
            stage = source.get("stepId")
            if not isinstance(stage, str) or stage not in join_alias:  # a list id is unhashable
                _err(
                    m,
                    "loop.fold_missing",
                    where,
                    f"join step {stage!r} has no joins[] entry with stage {stage!r}; "
                    "fix: add one naming its forStage and joinPolicy",
                )
            continue
        _part2_only(m, source, where)
        i = len(steps)
        new = f"steps[{i}]"
        m.paths[new] = where
        m.paths[join_path(new, "id")] = join_path(where, "stepId")  # also when it is missing
        step: dict[str, Any] = {}
        if isinstance(source.get("kind"), str) and source["kind"] in PONDER_ONLY_KINDS:
            _err(
                m,
                "loop.unsupported",
                join_path(where, "kind"),
                f"kind {source['kind']!r} is a ponder-plan/1 feature; "
                "fix: write the plan as ponder-plan/1",
            )
            continue
        for key, value in source.items():
            if key in PONDER_ONLY_STEP_KEYS:
                _err(
                    m,
                    "loop.unsupported",
                    join_path(where, key),
                    f"{key!r} is a ponder-plan/1 feature; fix: write the plan as ponder-plan/1",
                )
                continue
            if key in STEP_RENAMES:
                step[STEP_RENAMES[key]] = value
                m.paths[join_path(new, STEP_RENAMES[key])] = join_path(where, key)
            elif key == "retry" and isinstance(value, dict):
                step["retry"] = _renamed(
                    m,
                    value,
                    {"maxAttempts": "max_attempts", "retryableFailureClasses": "on"},
                    join_path(new, "retry"),
                    join_path(where, "retry"),
                )
            elif key == "budget" and isinstance(value, dict):
                step["budget"] = _renamed(
                    m,
                    value,
                    {"maxAgents": "max_agents"},
                    join_path(new, "budget"),
                    join_path(where, "budget"),
                )
            elif key == "deps" and isinstance(value, list):
                step["deps"] = [join_alias.get(d, d) if isinstance(d, str) else d for d in value]
            else:
                # Unknown keys pass through so the model reports them at the author's path.
                step[key] = value
        if step.get("role") not in (None, "qe"):
            _err(
                m,
                "loop.unsupported",
                join_path(where, "x-role"),
                f"x-role {step['role']!r} is not supported; fix: use x-role: qe or drop it",
            )
        step_id = source.get("stepId")
        kind = source.get("kind")
        if isinstance(step_id, str):
            _fold_step(m, raw, step, step_id, kind, new, where, gates, fanouts, joins, used)
            if kind == "pause":
                _fold_pause(m, raw, step, new, where, pauses, used)
        steps.append(step)
    m.doc["steps"] = steps
    for key, index in (("gates", gates), ("fanouts", fanouts), ("joins", joins)):
        for target, k in index.items():
            if target not in used[key]:
                by = "stepId" if key == "gates" else ("forStage" if key == "joins" else "stage")
                _err(
                    m,
                    "loop.fold_unknown",
                    join_path(key, k, by),
                    f"{target!r} names no {key[:-1]} step; fix: name a step of kind "
                    f"{'fanout' if key == 'joins' else key[:-1]}",
                )
    for state, k in pauses.items():
        if state not in used["pauses"]:
            _err(
                m,
                "loop.fold_unknown",
                join_path("pauses", k, "state"),
                f"no pause step has pauseState {state!r}; fix: match a step's pauseState",
            )
    return m


def _renamed(
    m: LoopMapping, value: dict[str, Any], names: dict[str, str], new: str, where: str
) -> dict[str, Any]:
    out = {}
    for key, item in value.items():
        target = names.get(key, key)
        out[target] = item
        m.paths[join_path(new, target)] = join_path(where, key)
    return out


def _fold_step(
    m: LoopMapping,
    raw: Mapping[str, Any],
    step: dict[str, Any],
    step_id: str,
    kind: object,
    new: str,
    where: str,
    gates: dict[str, int],
    fanouts: dict[str, int],
    joins: dict[str, int],
    used: dict[str, set[str]],
) -> None:
    if step_id in gates:
        used["gates"].add(step_id)
        k = gates[step_id]
        entry = raw["gates"][k]
        at = join_path("gates", k)
        if kind != "gate" or entry.get("kind", "gate") != "gate":
            _err(
                m,
                "loop.fold_unknown",
                join_path(at, "stepId"),
                f"{step_id!r} is not a gate step; fix: fold gates[] only into kind: gate steps",
            )
        for src, dst in (("failRoute", "fail_route"), ("maxRedos", "max_redos")):
            if src in entry:
                step[dst] = entry[src]
                m.paths[join_path(new, dst)] = join_path(at, src)
    if kind != "fanout":
        return
    if step_id not in fanouts:
        _err(
            m,
            "loop.fold_missing",
            where,
            f"fanout step {step_id!r} has no fanouts[] entry with stage {step_id!r}; "
            "fix: add one with registry, maxFanout and chain",
        )
        return
    used["fanouts"].add(step_id)
    k = fanouts[step_id]
    entry = raw["fanouts"][k]
    at = join_path("fanouts", k)
    spec: dict[str, Any] = {}
    m.paths[join_path(new, "fanout")] = at
    for src, dst in (
        ("registry", "over"),
        ("maxFanout", "max_fanout"),
        ("chain", "chain"),
        ("dedup", "dedup"),
    ):
        if src in entry:
            spec[dst] = entry[src]
            m.paths[join_path(new, "fanout", dst)] = join_path(at, src)
    if step_id in joins:
        used["joins"].add(step_id)
        jk = joins[step_id]
        jentry = raw["joins"][jk]
        if "joinPolicy" in jentry:
            spec["join"] = jentry["joinPolicy"]
            m.paths[join_path(new, "fanout", "join")] = join_path("joins", jk, "joinPolicy")
    step["fanout"] = spec


def _fold_pause(
    m: LoopMapping,
    raw: Mapping[str, Any],
    step: dict[str, Any],
    new: str,
    where: str,
    pauses: dict[str, int],
    used: dict[str, set[str]],
) -> None:
    state = step.pop("pauseState", None)
    if not isinstance(state, str) or state not in pauses:
        _err(
            m,
            "loop.fold_missing",
            join_path(where, "pauseState"),
            f"pause step has pauseState {state!r} and no pauses[] entry declares it; "
            "fix: add {state, resumeArg} to pauses",
        )
        return
    used["pauses"].add(state)
    k = pauses[state]
    entry = raw["pauses"][k]
    step["pause"] = {"state": state, "resume_arg": entry.get("resumeArg")}
    m.paths[join_path(new, "pause")] = join_path("pauses", k)
    m.paths[join_path(new, "pause", "state")] = join_path(where, "pauseState")
    m.paths[join_path(new, "pause", "resume_arg")] = join_path("pauses", k, "resumeArg")
