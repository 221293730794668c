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
