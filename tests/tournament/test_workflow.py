"""The Tournament workflow end to end on a real dev server: calls, determinism, refusals."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client

from activities.config import Endpoint, Price, Settings
from tests.conftest import with_endpoint
from tests.fakes import FakeProvider, Reply
from tests.tournament.helpers import failure, fingerprint, read_jsonl, run, start
from worker.worker import WorkerOptions, running_worker
from workflows.budget import BudgetLimits
from workflows.tournament.profiles import Profile, RankBlock
from workflows.tournament.prompts import PromptOverride, PromptOverrides
from workflows.tournament.types import RoleModels


async def test_quick_profile_makes_exactly_15_calls(
    client: Client, queue: str, settings: Settings
) -> None:
    result = await run(client, queue, profile="quick", seed=1)
    assert result.spent.calls == 15
    run_dir = Path(result.run_dir)
    usage = read_jsonl(run_dir / "usage.jsonl")
    assert len(usage) == 15
    assert {row["phase"] for row in usage} == {
        "initial_generation",
        "generation_judging:1",
        "generation_mutation:1",
        "final_judging",
    }
    candidates = read_jsonl(run_dir / "candidates.jsonl")
    assert [c["id"] for c in candidates if c["generation"] == 0] == [
        "g0-c0",
        "g0-c1",
        "g0-c2",
        "g0-c3",
    ]
    assert sorted(json.loads((run_dir / "population-1.json").read_text())) == [
        "g1-e0",
        "g1-m0",
        "g1-m1",
        "g1-m2",
    ]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["profile_name"] == "quick"
    assert summary["winner_id"] == result.winner_id
    assert summary["simulated"] is True
    assert (run_dir / "artifacts/final.txt").read_text() == result.final_answer


async def test_max_calls_equal_to_the_plan_completes(client: Client, queue: str) -> None:
    result = await run(client, queue, profile="quick", budget=BudgetLimits(max_calls=15))
    assert result.status == "completed"
    assert result.spent.calls == 15


async def test_max_calls_below_the_plan_is_refused_before_any_call(
    client: Client, queue: str, fake: FakeProvider, settings: Settings
) -> None:
    error = await failure(
        client, queue, profile="quick", model="local:default", budget=BudgetLimits(max_calls=14)
    )
    assert error.type == "budget.planned_calls_exceeded"
    assert "15" in error.message and "max_calls=14" in error.message
    assert fake.seen == []


async def test_same_seed_same_everything_even_in_random_completion_order(
    client: Client, queue: str
) -> None:
    jittery = "sim:default,latency=uniform:0-40"
    first = await run(client, queue, profile="balanced", seed=11, model=jittery)
    second = await run(client, queue, profile="balanced", seed=11, model=jittery)
    assert fingerprint(Path(first.run_dir)) == fingerprint(Path(second.run_dir))
    other = await run(client, queue, profile="balanced", seed=12, model=jittery)
    assert fingerprint(Path(other.run_dir)) != fingerprint(Path(first.run_dir))


async def test_fake_openai_server_wrapping_the_sim_gives_the_same_tournament(
    client: Client, queue: str, fake: FakeProvider
) -> None:
    direct = await run(client, queue, profile="quick", seed=5, model="sim:default")
    via_http = await run(client, queue, profile="quick", seed=5, model="local:default")
    assert len(fake.seen) == 15
    assert via_http.winner_id == direct.winner_id
    assert fingerprint(Path(via_http.run_dir)) == fingerprint(Path(direct.run_dir))


async def test_invalid_judge_json_is_retried_and_billed(client: Client, queue: str) -> None:
    result = await run(
        client,
        queue,
        profile="balanced",
        seed=2,
        invalid_json_retries=3,
        model="sim:default,invalid_json_rate=0.25",
    )
    run_dir = Path(result.run_dir)
    comparisons = read_jsonl(run_dir / "comparisons.jsonl")
    retried = [c for c in comparisons if c["attempts"] > 1]
    assert retried, "no judge call needed a retry at a 25% invalid rate"
    extra = sum(c["attempts"] - 1 for c in comparisons)
    assert result.spent.calls == 60 + extra
    assert len(read_jsonl(run_dir / "usage.jsonl")) == 60 + extra
    events = [e["type"] for e in read_jsonl(run_dir / "events.jsonl")]
    assert events.count("judge.invalid_json") == extra


async def test_persistent_invalid_json_fails_and_never_invents_a_tie(
    client: Client, queue: str, settings: Settings
) -> None:
    error = await failure(
        client,
        queue,
        profile="quick",
        run_id="never-a-tie",
        models=RoleModels(judge="sim:default,invalid_json_rate=1"),
    )
    assert error.type == "judge.persistent_invalid_json"
    assert "never invents a tie" in error.message
    run_dir = settings.runs_dir / "never-a-tie"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "failed"
    assert summary["error"].startswith("judge.persistent_invalid_json")
    assert read_jsonl(run_dir / "comparisons.jsonl") == []
    judge_rows = [u for u in read_jsonl(run_dir / "usage.jsonl") if u["role"] == "judge"]
    assert judge_rows and all(u["outcome"] == "success" for u in judge_rows)


@pytest.mark.parametrize(
    ("fields", "code", "needle"),
    [
        ({"custom": Profile(n=3, k=1, t=0, m=2)}, "profile.invalid", "even"),
        ({"profile": "huge"}, "profile.invalid", "quick"),
        ({"rank": RankBlock(mode="k-regular")}, "rank.k_required", "rank.k"),
        ({"rank": RankBlock(mode="k-regular", k=4)}, "rank.k_invalid", "k=4"),
        (
            {"custom": Profile(n=16, k=2, t=0, m=2), "rank": RankBlock(mode="all-pairs")},
            "rank.max_calls_required",
            "rank.max_calls",
        ),
        (
            {"rank": RankBlock(mode="k-regular", k=2, max_calls=3)},
            "rank.max_calls_exceeded",
            "max_calls=3",
        ),
        (
            {"prompts": PromptOverrides(generate=PromptOverride(user="{task} {nonsense}"))},
            "prompts.unknown_variable",
            "{nonsense}",
        ),
        ({"run_id": "bad id!"}, "run.id_invalid", "[A-Za-z0-9]"),
        # Field bounds are the input model's (tests/test_inputs.py); this rule is preflight's.
        ({"task": "   "}, "profile.invalid", "task must not be empty"),
    ],
)
async def test_refusals_before_any_call(
    client: Client, queue: str, fields: dict, code: str, needle: str
) -> None:
    run_id = fields.pop("run_id", None)
    workflow_id = f"refused-{uuid.uuid4().hex[:8]}"
    if run_id:
        fields["run_id"] = run_id
    else:
        fields["run_id"] = workflow_id
    error = await failure(client, queue, **fields)
    assert error.type == code
    assert needle in error.message


async def test_provider_failure_fails_the_run_with_its_class(
    client: Client, queue: str, fake: FakeProvider, settings: Settings
) -> None:
    fake.replies = [Reply(401, {"error": "bad key"})]
    error = await failure(
        client,
        queue,
        profile="quick",
        model="local:default",
        run_id="auth-fails",
        concurrency={"generate": 1},
    )
    assert error.type == "provider.auth"
    usage = read_jsonl(settings.runs_dir / "auth-fails" / "usage.jsonl")
    assert [u["outcome"] for u in usage] == ["failed"]
    assert usage[0]["error_code"] == "provider.auth"


async def test_unpriced_model_with_max_usd_is_refused_at_its_first_answer(
    client: Client, queue: str, settings: Settings
) -> None:
    error = await failure(
        client,
        queue,
        profile="quick",
        model="local:default",
        budget=BudgetLimits(max_usd=1.0),
        run_id="unpriced",
        concurrency={"generate": 1},
    )
    assert error.type == "budget.unpriced_model"
    assert "local:default" in error.message
    (row,) = read_jsonl(settings.runs_dir / "unpriced" / "usage.jsonl")  # the paid call is kept
    assert row["outcome"] == "success" and row["output_tokens"] > 0


async def test_usd_is_billed_from_the_price_table(client: Client, queue: str) -> None:
    price = Price(input=1.0, output=2.0)
    result = await run(
        client,
        queue,
        profile="quick",
        model="local:default",
        prices={"local:default": price},
        budget=BudgetLimits(max_usd=100),
    )
    expected = (result.spent.input_tokens * 1.0 + result.spent.output_tokens * 2.0) / 1e6
    assert result.spent.usd == pytest.approx(expected)


async def test_budget_exhausted_fails_when_asked_to(client: Client, queue: str) -> None:
    error = await failure(
        client,
        queue,
        profile="quick",
        on_budget_exhausted="fail",
        budget=BudgetLimits(max_output_tokens=50),
    )
    assert error.type == "budget.exhausted"
    assert "max_output_tokens" in error.message


async def test_run_id_in_use_is_refused(client: Client, queue: str) -> None:
    from temporalio.exceptions import WorkflowAlreadyStartedError

    handle = await start(client, queue, profile="quick", run_id=f"dup-{uuid.uuid4().hex[:6]}")
    await handle.result()
    with pytest.raises(WorkflowAlreadyStartedError):
        await start(client, queue, profile="quick", run_id=handle.id)


async def test_finalizer_polishes_the_winner(client: Client, queue: str) -> None:
    result = await run(
        client, queue, profile="quick", seed=3, models=RoleModels(finalize="sim:default")
    )
    summary = json.loads((Path(result.run_dir) / "summary.json").read_text())
    assert summary["final_answer_is_postprocessed"] is True
    assert result.spent.calls == 16
    assert result.final_answer.startswith("Simulated final answer from " + result.winner_id)


async def test_adaptive_schedule_spends_its_budget_in_batches(client: Client, queue: str) -> None:
    # Balanced: 8 generations + 2 x (8 judged + 6 mutants) + 8 judged. Each adaptive phase
    # judges 30% of its k-regular pairs (12 and 16), but at least n = 8.
    result = await run(client, queue, profile="balanced", seed=9, schedule="adaptive")
    assert result.spent.calls == 8 + 2 * (8 + 6) + 8
    run_dir = Path(result.run_dir)
    comparisons = read_jsonl(run_dir / "comparisons.jsonl")
    final = [c for c in comparisons if c["phase"] == "final_judging"]
    assert len(final) == 8
    assert all(c["presented_a"] != c["presented_b"] for c in comparisons)
    # Pairs picked from earlier verdicts: the bootstrap's intervals are marked as not valid.
    confidence = json.loads((run_dir / "summary.json").read_text())["confidence"]
    assert confidence["intervals_valid"] is False and "too wide" in confidence["note"]
    report = (run_dir / "report.html").read_text()
    assert "The intervals are not valid here" in report
    again = await run(client, queue, profile="balanced", seed=9, schedule="adaptive")
    assert fingerprint(Path(again.run_dir)) == fingerprint(run_dir)
    # A share of 1 (ponder think --m) spends every k-regular pair, as runs before the default.
    whole = await run(
        client, queue, profile="balanced", seed=9, schedule="adaptive", adaptive_share=1.0
    )
    assert whole.spent.calls == 8 + 2 * (12 + 6) + 16


async def test_zero_generations_and_a_redacted_config(
    client: Client, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A real configured key, pasted into the task, the rubric and a prompt override.
    secret = "sk-live-" + "R4n" * 12
    monkeypatch.setenv("CONFIGURED_PROVIDER_KEY", secret)
    keyed = Endpoint(
        kind="openai", base_url="http://127.0.0.1:9/v1", api_key_env="CONFIGURED_PROVIDER_KEY"
    )
    settings = with_endpoint(settings, "keyed", keyed)
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        result = await run(
            client,
            queue,
            task=f"Sort a list in place. My key is {secret}.",
            rubric=f"Correct first; never print {secret}",
            prompts=PromptOverrides(generate=PromptOverride(system=f"key {secret}: be terse")),
            custom=Profile(n=4, k=2, t=0, m=2),
            seed=1,
            prices={"sim:default": Price(input=0.0, output=0.0)},
        )
    run_dir = Path(result.run_dir)
    assert result.spent.calls == 4 + 4
    assert {r["phase"] for r in read_jsonl(run_dir / "usage.jsonl")} == {
        "initial_generation",
        "final_judging",
    }
    config = json.loads((run_dir / "config.json").read_text())
    assert config["budget"]["max_input_tokens"] is None  # a budget key, not a secret
    assert config["profile"]["n"] == 4
    assert config["task"] == "Sort a list in place. My key is [redacted]."
    assert config["rubric"] == "Correct first; never print [redacted]"
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert run_dir / "config.json" in files and len(files) > 5
    assert [p for p in files if secret.encode() in p.read_bytes()] == []


def test_config_redaction_keeps_budget_keys() -> None:
    from activities.tournament.artifacts import redact_config

    redacted = redact_config(
        {
            "api_key": "sk-1",
            "headers": {"Authorization": "Bearer x"},
            "password": "p",
            "max_input_tokens": 10,
            "access_token": "t",
            "budget": {"max_output_tokens": 5},
        }
    )
    assert redacted == {
        "api_key": "[redacted]",
        "headers": {"Authorization": "[redacted]"},
        "password": "[redacted]",
        "max_input_tokens": 10,
        "access_token": "[redacted]",
        "budget": {"max_output_tokens": 5},
    }
