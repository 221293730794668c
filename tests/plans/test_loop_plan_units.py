"""Direct unit tests of the ``loop-plan/1`` mapping (workflows.plan.loop_plan): the exact
message of each refusal the mapping writes itself, and path translation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.plans.test_validate import _loop
from workflows.plan.loop_plan import map_loop_plan, translate

Doc = dict[str, Any]
P1 = "fix: write the plan as ponder-plan/1"

CASES: list[tuple[Callable[[Doc], Any], list[tuple[str, str, str]]]] = [
    (
        lambda d: d["fanouts"][0].update(overflow="spill"),
        [
            (
                "loop.unsupported",
                "fanouts[0].overflow",
                "overflow='spill' is not supported; fix: use 'window' (the only behaviour ponder "
                "implements)",
            )
        ],
    ),
    (
        lambda d: d["joins"][0].update(onInvalid="skip"),
        [
            (
                "loop.unsupported",
                "joins[0].onInvalid",
                "onInvalid='skip' is not supported; fix: use 'named-failure' (the only behaviour "
                "ponder implements)",
            )
        ],
    ),
    (
        lambda d: d["steps"][2].update({"x-role": "judge"}),
        [
            (
                "loop.unsupported",
                "steps[2].x-role",
                "x-role 'judge' is not supported; fix: use x-role: qe or drop it",
            )
        ],
    ),
    (
        lambda d: d.update(flows={}),
        [("loop.unsupported", "flows", f"'flows' is a ponder-plan/1 feature; {P1}")],
    ),
    (
        lambda d: d["steps"][1].update(dispatch="consumer", checkpoint="c", kind="run"),
        [
            (
                "loop.unsupported",
                "steps[1].kind",
                f"kind 'run' is a ponder-plan/1 feature; {P1} to use it",
            ),
            (
                "loop.unsupported",
                "steps[1].dispatch",
                f"'dispatch' is a ponder-plan/1 feature; {P1} to use it",
            ),
            (
                "loop.unsupported",
                "steps[1].checkpoint",
                f"'checkpoint' is a ponder-plan/1 feature; {P1} to use it",
            ),
        ],
    ),
    (
        lambda d: d["steps"][1].update(budget={"maxAgents": 2, "tokens": 9, "usd": 1}),
        [
            (
                "loop.unsupported",
                "steps[1].budget.tokens",
                f"budget.tokens (a nested ledger) is a ponder-plan/1 feature; {P1} to use it",
            ),
            (
                "loop.unsupported",
                "steps[1].budget.usd",
                f"budget.usd (a nested ledger) is a ponder-plan/1 feature; {P1} to use it",
            ),
        ],
    ),
    (
        lambda d: d.update(subsystems={"trainingPairs": True}),
        [
            (
                "loop.unsupported",
                "subsystems",
                "subsystems (training pairs, checkpoints) run in ponder-plan/1 plans only; fix: "
                "write the plan as ponder-plan/1 with training_pairs: true",
            )
        ],
    ),
    (
        lambda d: d["steps"][1].update(ensure=[{"expr": "true"}]),
        [("loop.unsupported", "steps[1].ensure", f"'ensure' is a ponder-plan/1 feature; {P1}")],
    ),
    (
        lambda d: d["steps"].append({"stepId": "s", "kind": "set", "set": {"a": "1"}}),
        [("loop.unsupported", "steps[7].kind", f"kind 'set' is a ponder-plan/1 feature; {P1}")],
    ),
    (
        lambda d: d["gates"].append({"stepId": "x", "bogus": 1}),
        [
            (
                "field.unknown",
                "gates[1].bogus",
                "'bogus' is not a loop-plan/1 gates field ponder accepts; fix: remove it "
                "(accepted: failRoute, kind, maxRedos, stepId)",
            ),
            (
                "loop.fold_unknown",
                "gates[1].stepId",
                "'x' names no gate step; fix: name a step of kind gate",
            ),
        ],
    ),
    (
        lambda d: d["gates"].append({"stepId": "review"}),
        [
            (
                "loop.fold_duplicate",
                "gates[1].stepId",
                "gates[0] already folds into 'review'; fix: merge the entries",
            )
        ],
    ),
    (
        lambda d: d.update(gates=5),
        [("field.type", "gates", "gates must be a list; fix: write gates: [...]")],
    ),
    (
        lambda d: d["gates"].append(5),
        [("document.not_object", "gates[1]", "gates[1] must be a mapping; fix: write {...}")],
    ),
    (
        lambda d: d["gates"].append({"maxRedos": 1}),
        [("field.missing", "gates[1].stepId", "stepId (a string) is required; fix: add it")],
    ),
    (
        lambda d: d["fanouts"].clear(),
        [
            (
                "loop.fold_missing",
                "steps[4]",
                "fanout step 'notes' has no fanouts[] entry with stage 'notes'; fix: add one with "
                "registry, maxFanout and chain",
            ),
            (
                "loop.fold_unknown",
                "joins[0].forStage",
                "'notes' names no join step; fix: name a step of kind fanout",
            ),
        ],
    ),
    (
        lambda d: d["pauses"].clear(),
        [
            (
                "loop.fold_missing",
                "steps[3].pauseState",
                "pause step has pauseState 'AWAITING_RELEASE_APPROVAL' and no pauses[] entry "
                "declares it; fix: add {state, resumeArg} to pauses",
            )
        ],
    ),
    (
        lambda d: d.update(trace={"emit": True, "level": 2}),
        [("field.unknown", "trace.level", "trace takes only emit; fix: remove the key")],
    ),
    (
        lambda d: d["pauses"].append({"state": "NOBODY", "resumeArg": "x"}),
        [
            (
                "loop.fold_unknown",
                "pauses[1].state",
                "no pause step has pauseState 'NOBODY'; fix: match a step's pauseState",
            )
        ],
    ),
    (
        lambda d: d.update(checkpointing=True),
        [
            (
                "field.unknown",
                "checkpointing",
                "'checkpointing' is not a loop-plan/1 field ponder accepts; fix: remove it",
            )
        ],
    ),
]


@pytest.mark.parametrize(("change", "expected"), CASES)
def test_mapping_refusals(change: Callable[[Doc], Any], expected: list[Any]) -> None:
    doc = _loop()
    change(doc)
    found = [(e.code, e.path, e.message) for e in map_loop_plan(doc).errors]
    assert found == expected


def test_the_example_maps_cleanly() -> None:
    assert map_loop_plan(_loop()).errors == []


def test_translate_uses_the_longest_recorded_prefix() -> None:
    paths = {"steps[4]": "steps[4]", "steps[4].fanout": "fanouts[0]", "steps[1]": "steps[1]"}
    assert translate("steps[4].fanout.over", paths) == "fanouts[0].over"
    assert translate("steps[4].fanout", paths) == "fanouts[0]"
    assert translate("steps[4].fanouts", paths) == "steps[4].fanouts"
    assert translate("steps[4].fanout[0]", paths) == "fanouts[0][0]"
    assert translate("steps[10]", paths) == "steps[10]"  # not under steps[1]
    assert translate("name", paths) == "name"
    assert translate("steps[1]", {"steps[1]": "x", "steps": "y"}) == "x"
