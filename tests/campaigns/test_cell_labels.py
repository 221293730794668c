"""What a cell's record names: the model as one ``provider:model`` label."""

from __future__ import annotations

from activities.campaign.cells import _spend


def test_a_single_cells_model_is_labelled_once() -> None:
    """An Ask's summary gives the model as specified (``sim:default``) beside its provider."""
    summary = {"status": "completed", "provider": "sim", "model": "sim:default", "usage": {}}
    assert _spend("single", summary).model == "sim:default"  # not sim:sim:default
    bare = {"status": "completed", "provider": "openai", "model": "gpt-4o", "usage": {}}
    assert _spend("single", bare).model == "openai:gpt-4o"


def test_cancelled_cells_are_counted_apart_from_failed_ones() -> None:
    from tests.campaigns.test_stats import record
    from workflows.campaign.stats import analyse

    records = [record("a", "s", seed, 0.5) for seed in range(3)]
    records += [record("b", "s", 0, 0.6)]
    records += [
        record("b", "s", 1, 0.0).model_copy(
            update={"holdout_score": None, "failure_class": "cancelled", "error": "cancelled"}
        ),
        record("b", "s", 2, 0.0).model_copy(
            update={"holdout_score": None, "failure_class": "runner_threw", "error": "boom"}
        ),
    ]
    analysis = analyse(records, variants=["a", "b"], comparator="a", rope=0.02, min_pairs=1)
    b = next(v for v in analysis.variants if v.variant == "b")
    assert (b.cells, b.scored, b.failed, b.cancelled) == (3, 1, 1, 1)


def test_the_prompt_hash_is_of_the_prompt_each_variant_sends() -> None:
    """Not of the task text (identical for every variant): of what the variant sends."""
    import hashlib
    import json

    from workflows.campaign.configs import prompt_hash
    from workflows.campaign.document import Variant
    from workflows.tournament.prompts import DEFAULT_RUBRIC, render

    def variant(kind: str, **config: object) -> Variant:
        return Variant.model_validate({"id": "v", "kind": kind, "config": config})

    task = "Sort a list of a million integers."
    single = prompt_hash(variant("single", model="sim:default"), task=task)
    sent = {"role": "generate", "system": "", "user": task}  # no system message: ""
    assert single == hashlib.sha256(json.dumps(sent, sort_keys=True).encode()).hexdigest()
    assert prompt_hash(variant("single", model="openai:gpt-4o"), task=task) == single  # same ask
    brief = prompt_hash(variant("single", model="sim:default", system="Be brief."), task=task)
    assert brief != single
    assert prompt_hash(variant("single", model="sim:default"), task="Other.") != single
    deep = prompt_hash(variant("tournament", profile="quick", model="sim:default"), task=task)
    generate = render("generate", {"task": task, "rubric": DEFAULT_RUBRIC})
    assert deep == generate.sha256 and deep != single
    # A single shot in the tournament's style asks what the tournament's generator asks.
    styled = variant("single", model="sim:default", prompt_style="general")
    assert prompt_hash(styled, task=task) == deep
    rubric = variant("tournament", profile="quick", model="sim:default", rubric="Be exact.")
    assert prompt_hash(rubric, task=task) != deep
    plan = {"schema": "ponder-plan/1", "name": "p", "steps": [
        {"id": "a", "kind": "agent", "prompt": "Do ${input.task}", "model": "sim:default"}
    ]}  # fmt: skip
    planned = prompt_hash(variant("plan", plan=plan), task=task)
    assert planned != prompt_hash(variant("plan", plan=plan, args={"tone": "dry"}), task=task)
    assert len({single, brief, deep, planned}) == 4
