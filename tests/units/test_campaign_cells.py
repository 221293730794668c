"""Direct tests of a campaign's cell matrix and its cells' records, values computed by hand."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from tests.campaigns.helpers import document
from workflows.campaign.cell_records import (
    RecordInvalid,
    build_record,
    judge_metadata,
    judge_prompt,
    leader,
    unsettled_record,
)
from workflows.campaign.document import CampaignDocument, JudgeScorer, validate_value
from workflows.campaign.matrix import Cell, cell_run_id, cells, child_seed, fingerprint
from workflows.campaign.records import JudgeMetadata, RunRecord, TokenUsage
from workflows.campaign.types import CellOutcome
from workflows.model_types import ModelResponse, Usage


def parsed(**overrides: Any) -> CampaignDocument:
    doc = validate_value(document(**overrides)).document
    assert doc is not None
    return doc


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# -- the matrix ------------------------------------------------------------------------------


def test_a_cell_s_seed_is_31_bits_of_the_sha256_of_scenario_and_seed() -> None:
    digest = hashlib.sha256(b'["s1", 7]').digest()
    assert child_seed(7, "s1") == int.from_bytes(digest[:4], "big") & 0x7FFFFFFF
    seeds = {child_seed(seed, f"s{i}") for seed in range(20) for i in range(5)}
    assert len(seeds) == 100
    # the top bit is always cleared: a seed is a non-negative 32-bit integer
    assert all(0 <= s < 2**31 for s in seeds)
    assert any(
        int.from_bytes(hashlib.sha256(json.dumps([f"s{i}", seed]).encode()).digest()[:4], "big")
        >= 2**31
        for seed in range(20)
        for i in range(5)
    )


def test_a_cell_s_run_id_is_the_campaign_s_and_twelve_hex_digits() -> None:
    key = json.dumps(["camp", "v", "s", 3])
    assert cell_run_id("camp", "v", "s", 3) == f"camp.{sha(key)[:12]}"


def test_every_cell_carries_its_seed_pair_s_child_seed() -> None:
    doc = parsed()
    matrix = cells(doc, "camp-1")
    assert [c.index for c in matrix] == list(range(18))
    for cell in matrix:
        assert cell.child_seed == child_seed(cell.seed, cell.scenario)
        assert cell.run_id == cell_run_id("camp-1", cell.variant, cell.scenario, cell.seed)


def expected_fingerprint(doc: CampaignDocument, **extra: object) -> str:
    design: dict[str, object] = {
        "campaign_id": doc.campaign_id,
        "variants": sorted(v.id for v in doc.variants),
        "scenarios": sorted(s.id for s in doc.scenarios),
        "seeds": sorted(doc.seeds),
        "split": doc.split,
        "comparator": doc.comparator_id,
        "base_urls": sorted(
            {str(v.config["base_url"]) for v in doc.variants if v.config.get("base_url")}
        ),
        "provider": doc.route.provider,
        "preregistration_hash": doc.preregistration_hash,
        **extra,
    }
    return sha(json.dumps(design, sort_keys=True, separators=(",", ":")))


def test_the_fingerprint_is_the_sha256_of_the_compact_sorted_design() -> None:
    doc = parsed()
    assert fingerprint(doc) == expected_fingerprint(doc)


def test_the_fingerprint_takes_base_urls_provider_and_analysis_seed() -> None:
    variants = document()["variants"]
    variants[0]["config"]["base_url"] = "http://127.0.0.1:9/v1"
    doc = parsed(
        variants=variants,
        route={"provider": "openai"},
        preregistration_hash="abc",
        analysis_seed=5,
    )
    assert doc.route.provider == "openai"
    assert fingerprint(doc) == expected_fingerprint(doc, analysis_seed=5)


# -- records ---------------------------------------------------------------------------------


def cell(seed: int = 1) -> Cell:
    return Cell(index=2, variant="single", scenario="s0", seed=seed, run_id="camp.x", child_seed=9)


def record(doc: CampaignDocument, outcome: CellOutcome, **kwargs: Any) -> RunRecord:
    options: dict[str, Any] = {
        "calls": 3,
        "wall_ms": 12.34567,
        "child_error": None,
        "cancelled": False,
        "prompt_hash": "ph",
    }
    return build_record(doc, kwargs.pop("cell", cell()), outcome, **(options | kwargs))


def test_a_scored_cell_s_record_field_by_field() -> None:
    doc = parsed()
    outcome = CellOutcome(
        exists=True,
        completed=True,
        input_tokens=5,
        output_tokens=7,
        usd=0.25,
        model="sim:answered",
        simulated=True,
        score=0.75,
    )
    r = record(doc, outcome)
    config = doc.variant("single")
    assert r.model_dump() == {
        "run_id": "camp.x",
        "campaign": "deep-vs-single",
        "variant": "single",
        "scenario": "s0",
        "seed": 1,
        "cell_seed": 9,
        "split": "holdout",
        "model": "sim:answered",
        "prompt_hash": "ph",
        "config_hash": sha(
            json.dumps({"kind": config.kind, "config": config.config}, sort_keys=True)
        ),
        "commit_sha": "abc123",
        "wall_ms": 12.346,
        "cost_usd": 0.25,
        "calls": 3,
        "usage": {"input_tokens": 5, "output_tokens": 7},
        "holdout_score": 0.75,
        "search_score": None,
        "failure_class": None,
        "error": None,
        "integrity_issues": [],
        "simulated": True,
        "judge_metadata": None,
    }


@pytest.mark.parametrize("split", ["search", "dev"])
def test_a_search_or_dev_campaign_s_score_is_a_search_score(split: str) -> None:
    r = record(parsed(split=split), CellOutcome(exists=True, completed=True, score=0.5))
    assert (r.search_score, r.holdout_score, r.split) == (0.5, None, split)


def test_the_model_falls_back_to_the_variant_s_config_then_to_nothing() -> None:
    doc = parsed()
    r = record(doc, CellOutcome(exists=True, completed=True, score=1.0))
    assert r.model == "sim:default"
    variants = document()["variants"]
    variants[1]["config"] = {"profile": "quick"}
    r = record(
        parsed(variants=variants),
        CellOutcome(exists=True, completed=True, score=1.0),
        cell=Cell(index=0, variant="deep", scenario="s0", seed=0, run_id="c.y", child_seed=0),
    )
    assert r.model == ""


def test_a_failed_cell_s_class_in_the_order_a_cell_fails() -> None:
    doc = parsed()
    broken = CellOutcome(
        exists=True, completed=True, score=0.5, integrity_issues=["a", "b"], score_error="no"
    )
    cancelled = record(doc, broken, cancelled=True, child_error="boom")
    assert (cancelled.failure_class, cancelled.error) == (
        "cancelled",
        "cancelled before it finished",
    )
    threw = record(doc, broken, child_error="boom")
    assert (threw.failure_class, threw.error, threw.score) == ("runner_threw", "boom", None)
    integrity = record(doc, broken)
    assert (integrity.failure_class, integrity.error) == ("integrity_failed", "a, b")
    assert integrity.integrity_issues == ["a", "b"]
    scorer = record(parsed(integrity="log"), broken)
    assert (scorer.failure_class, scorer.error) == ("scorer_failed", "no")
    unscored = record(doc, CellOutcome(exists=True, completed=True))
    assert (unscored.failure_class, unscored.error) == ("scorer_failed", "no score")


def test_a_record_that_does_not_validate_is_refused_with_its_first_problem() -> None:
    with pytest.raises(RecordInvalid) as caught:
        record(parsed(), CellOutcome(exists=True, completed=True, score=1.0), cell=cell(seed=-1))
    assert str(caught.value) == "cell camp.x: Input should be greater than or equal to 0"
    assert caught.value.code == "record.invalid"


def test_an_unsettled_cell_s_record_counts_its_worst_case_and_says_why() -> None:
    doc = parsed(drain_timeout_s=7.5)
    r = unsettled_record(doc, cell(), calls=4, wall_ms=1.0, prompt_hash="ph")
    assert (r.failure_class, r.calls, r.holdout_score) == ("unsettled", 4, None)
    assert r.integrity_issues == ["unsettled"]
    assert r.error == (
        "did not settle within the drain bound (7.5 s, drain_timeout_s): up to 4 in-flight "
        "calls may be paid and unrecorded"
    )


def test_the_judge_prompt_fills_task_rubric_answer_and_scale() -> None:
    assert judge_prompt("T", "R", "A", scale=10.0) == (
        "Grade the answer below against the rubric. Reply with one line of reasoning, then the "
        "score from 0 to 10 alone on the last line.\n\nTask:\nT\n\nRubric:\nR\n\nAnswer:\nA\n"
    )
    assert "score from 0 to 1 alone" in judge_prompt("T", "R", "A")


def test_the_judge_s_metadata_keeps_the_verdict_cut_the_grade_and_the_spend() -> None:
    scorer = JudgeScorer(kind="judge", model="sim:judge", rubric="r", scale=10.0)
    text = "fine work\n 8 "
    response = ModelResponse(
        text=text, model="judge-v1", provider="sim", usage=Usage(input_tokens=4, output_tokens=2)
    )
    assert judge_metadata(scorer, response) == JudgeMetadata(
        model="sim:judge",
        answered_by="judge-v1",
        raw_verdict=text,
        verdict_cut=False,
        grade=8.0,
        scale=10.0,
        usage=TokenUsage(input_tokens=4, output_tokens=2),
        cost_usd=0.0,
    )
    long = ModelResponse(text="x" * 4001, model="m", provider="sim", usd=0.5)
    meta = judge_metadata(scorer, long)
    assert (meta.verdict_cut, len(meta.raw_verdict), meta.grade, meta.cost_usd) == (
        True,
        4000,
        None,
        0.5,
    )
    exact = judge_metadata(scorer, ModelResponse(text="y" * 4000, model="m", provider="sim"))
    assert exact.verdict_cut is False
    empty = judge_metadata(scorer, ModelResponse(text=" \n ", model="m", provider="sim"))
    assert empty.grade is None


def scored(variant: str, score: float | None) -> RunRecord:
    return RunRecord(
        run_id="r",
        campaign="c",
        variant=variant,
        scenario="s",
        seed=0,
        split="holdout",
        model="m",
        prompt_hash="p",
        config_hash="h",
        commit_sha="x",
        wall_ms=0,
        cost_usd=0,
        holdout_score=score,
        failure_class=None if score is not None else "scorer_failed",
    )


def test_the_leader_is_the_variant_with_the_best_mean_score() -> None:
    assert leader([]) == (None, None)
    assert leader([scored("a", None)]) == (None, None)
    records = [
        scored("a", 1.0),
        scored("a", 0.0),
        scored("a", None),
        scored("b", 0.75),
        scored("b", 0.25),
        scored("b", 0.5),
        scored("c", 0.4),
    ]
    # a: 0.5 over two scores; b: 0.5 over three; c: 0.4. Ties go to the first seen.
    assert leader(records) == ("a", 0.5)
    assert leader([*records, scored("c", 0.9)]) == ("c", 0.65)
