"""Wire replay of campaigns: record against a real (fake) HTTP provider and the sim, replay with
no provider reachable, get the same records and report; a real miss under each policy."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from temporalio.client import Client
from temporalio.exceptions import ApplicationError

from activities.config import Endpoint, Settings
from activities.wire_cache import WireCaches, recording_files
from client.documents import load
from client.read_tokens import attach_read_tokens, read_token
from tests.campaigns.helpers import document, run_campaign
from tests.cli import cli_env, ponder, ponder_here
from tests.conftest import with_endpoint
from tests.fakes import (
    FakeProvider,
    Reply,
    Seen,
    anthropic_message,
    openai_completion,
    sim_responder,
)
from tests.plans.run_helpers import agent, plan_doc
from tests.plans.run_helpers import failure as plan_failure
from tests.plans.run_helpers import run as run_plan
from tests.plans.test_run_control import temporal
from tests.test_command_replay import ask, failure_of
from worker.worker import WorkerOptions, running_worker
from workflows.ask_types import AskInput
from workflows.call_options import CallOptions
from workflows.campaign.matrix import cell_run_id, child_seed
from workflows.campaign.types import CampaignResult
from workflows.names import CAMPAIGN
from workflows.plan.run_types import PlanFailureDetail
from workflows.wire_replay import WireReplay, canonical_request, wire_key

KEY_ENV = "PONDER_TEST_CORP_KEY"
PLAN_EXAMPLE = Path(__file__).resolve().parents[2] / "examples/campaigns/plan-vs-single.yaml"
IDENTITY = ("run_id", "wall_ms")
"""The record fields a replay does not reproduce: its own cell's run id and its own clock."""


@pytest.fixture
async def http_queue(
    client: Client, settings: Settings, fake: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[str, Settings]]:
    # ponder_headers: the fake reads the call's role from them and judges like the sim. The key
    # is there while recording; a test that replays offline takes it away.
    monkeypatch.setenv(KEY_ENV, "sk-corp-test")
    endpoint = Endpoint(kind="openai", base_url=fake.url, ponder_headers=True, api_key_env=KEY_ENV)
    configured = with_endpoint(settings, "corp", endpoint)
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, configured, WorkerOptions(task_queue=queue)):
        yield queue, configured


REFUSAL = "no such model: bad"


def refuse_bad(seen: Seen) -> Reply:
    """The sim behind HTTP, but a 400 for the model ``bad`` (indented JSON, as servers send)."""
    if seen.body.get("model") != "bad":
        return sim_responder(seen)
    error = {"error": {"message": REFUSAL, "type": "invalid_request_error"}}
    return Reply(status=400, raw=json.dumps(error, indent=2).encode())


def mixed_document(**overrides: Any) -> dict[str, Any]:
    """Two HTTP variants on the fake (a single shot and a tournament) and a sim single shot."""
    base: dict[str, Any] = {"seeds": [0, 1], "min_pairs": 2}
    doc = document(**base | overrides)
    doc["variants"] = [
        {"id": "single", "kind": "single", "config": {"model": "sim:default"}},
        {"id": "http", "kind": "single", "config": {"model": "corp:m", "temperature": 0.7}},
        {
            "id": "deep-http",
            "kind": "tournament",
            "config": {"profile": "quick", "model": "corp:m"},
        },
    ]
    doc["scenarios"] = doc["scenarios"][:2]
    return doc


async def run(
    client: Client,
    queue: str,
    doc: dict[str, Any],
    *,
    replay: dict[str, str] | None = None,
    settings: Settings | None = None,
) -> tuple[str, Any]:
    """Start a campaign (replaying ``replay`` when given, with the recorded run's read token
    from ``settings``' run store, as the client sends it); its id and result or failure."""
    if replay is not None:
        doc = {**doc, "calls": {"replay": replay}}
        if settings is not None:
            doc = attach_read_tokens(doc, settings.runs_dir)
    run_id = f"camp-{uuid.uuid4().hex[:8]}"
    return run_id, await run_campaign(client, queue, doc, run_id)


def replaying(settings: Settings, run_id: str) -> CallOptions:
    """``calls`` that replay run ``run_id``, with its read token from the run store."""
    token = read_token(settings.runs_dir, run_id)
    assert token is not None
    return CallOptions(replay=WireReplay(run_id=run_id), read_tokens={run_id: token})


def records(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run_dir / "records.jsonl").read_text().splitlines()]


def without_identity(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k not in IDENTITY} for r in rows]


def events(settings: Settings, run_id: str) -> list[dict[str, Any]]:
    path = settings.runs_dir / run_id / "raw-events.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()]


def identity_map(doc: dict[str, Any], original: str, replay: str) -> dict[str, str]:
    """Every run id of the original campaign -> the replay's (the campaign's and each cell's)."""
    mapping = {original: replay}
    for v in doc["variants"]:
        for s in doc["scenarios"]:
            for seed in doc["seeds"]:
                old = cell_run_id(original, v["id"], s["id"], seed)
                mapping[old] = cell_run_id(replay, v["id"], s["id"], seed)
    return mapping


def mapped(text: str, mapping: dict[str, str]) -> str:
    """``text`` with the original's run ids swapped for the replay's in one pass."""
    pattern = re.compile("|".join(re.escape(k) for k in sorted(mapping, key=len, reverse=True)))
    return pattern.sub(lambda m: mapping[m.group(0)], text)


# -- the key ---------------------------------------------------------------------------------


def test_the_wire_key_separates_seeds_and_folds_provider_shapes() -> None:
    chat = {
        "model": "m",
        "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}],
        "temperature": 0.7,
        "seed": 5,  # the body's own seed is not what the key reads
    }
    messages_api = {"model": "m", "system": "S", "messages": [{"role": "user", "content": "Q"}]}
    assert canonical_request(messages_api)["messages"] == chat["messages"]
    assert wire_key(chat, 1) != wire_key(chat, 2)  # same prompt, another seed: another sample
    assert wire_key(chat, 1) == wire_key(dict(reversed(chat.items())), 1)
    assert wire_key(chat, 1) == wire_key({**chat, "seed": 9}, 1)
    for field, value in [("model", "n"), ("temperature", 0.1), ("max_tokens", 9)]:
        assert wire_key({**chat, field: value}, 1) != wire_key(chat, 1), field
    json_mode = {**chat, "response_format": {"type": "json_object"}}
    assert wire_key(json_mode, 1) != wire_key(chat, 1)
    assert re.fullmatch(r"[0-9a-f]{64}", wire_key(chat, 1))


def test_the_replay_source_is_a_run_id_never_a_path() -> None:
    assert WireReplay(run_id="camp-1").on_miss == "throw"
    for source in ["/etc/passwd", "../camp-1", "runs/camp-1", ""]:
        with pytest.raises(ValidationError, match="run id"):
            WireReplay(run_id=source)
    with pytest.raises(ValidationError):
        WireReplay(run_id="camp-1", on_miss="guess")  # type: ignore[arg-type]


async def test_a_campaign_naming_a_path_as_its_replay_source_fails_at_once(
    client: Client, worker_queue: str
) -> None:
    _, error = await run(client, worker_queue, document(), replay={"run_id": "/etc/passwd"})
    assert isinstance(error, ApplicationError) and error.type == "input.invalid"
    assert "calls.replay.run_id" in error.message and "must match" in error.message


def test_recordings_are_read_from_the_store_and_replay_dirs_never_through_links(
    settings: Settings, tmp_path: Path
) -> None:
    declared, outside = tmp_path / "declared", tmp_path / "outside"
    settings = settings.model_copy(update={"replay_dirs": [declared]})
    cell = "camp-1.0123456789ab"
    for root, name in [
        (settings.runs_dir, "camp-1"),
        (settings.runs_dir, cell),
        (declared, "camp-1.ba9876543210"),
        (settings.runs_dir, "camp-1.x"),  # another campaign's id, not a cell of camp-1
        (settings.runs_dir, "camp-12"),
        (outside, "elsewhere"),
    ]:
        (root / name).mkdir(parents=True)
        (root / name / "raw-events.jsonl").write_text("{}\n")
    # A cell directory that is a link, and an events file that is one, lead outside: skipped.
    (settings.runs_dir / "camp-1.aaaaaaaaaaaa").symlink_to(outside / "elsewhere")
    (settings.runs_dir / "camp-1.bbbbbbbbbbbb").mkdir()
    (settings.runs_dir / "camp-1.bbbbbbbbbbbb" / "raw-events.jsonl").symlink_to(
        outside / "elsewhere" / "raw-events.jsonl"
    )
    # A line cut short (a worker killed mid-write) is skipped, the rest is read.
    body = {"model": "m", "messages": [{"role": "user", "content": "Q"}]}
    whole = {"call_key": "ask/0/0", "provider_kind": "sim", "seed": 3, "request": {"body": body}}
    whole["response"] = {"status": 200, "body": {"text": "A"}}
    (settings.runs_dir / cell / "raw-events.jsonl").write_text(
        json.dumps(whole) + "\n" + json.dumps(whole)[:40] + "\n"
    )
    cache = WireCaches(settings).get("camp-1")
    hit = cache.find([wire_key(body, 3)], call_key="other/0/0", provider_kind="sim")
    assert hit is not None and hit[1].response["body"] == {"text": "A"}
    assert cache.find([wire_key(body, 4)], call_key="ask/0/0", provider_kind="sim") is None
    assert cache.find([wire_key(body, 3)], call_key="ask/0/0", provider_kind="openai") is None
    found = recording_files("camp-1", settings)
    assert found == [
        settings.runs_dir.resolve() / "camp-1" / "raw-events.jsonl",
        settings.runs_dir.resolve() / cell / "raw-events.jsonl",
        declared.resolve() / "camp-1.ba9876543210" / "raw-events.jsonl",
    ]


# -- record, then replay offline ------------------------------------------------------------------


async def test_a_recorded_campaign_replays_offline_to_the_same_records_and_report(
    client: Client,
    http_queue: tuple[str, Settings],
    fake: FakeProvider,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    queue, settings = http_queue
    # A fourth variant names a model the server refuses (HTTP 400): its cells fail, and the
    # replay must fail them the same way (same code, same message quoting the server).
    fake.responder = refuse_bad
    doc = mixed_document()
    doc["variants"].append({"id": "refused", "kind": "single", "config": {"model": "corp:bad"}})
    original, recorded = await run(client, queue, doc)
    assert isinstance(recorded, CampaignResult) and recorded.failed_cells == 4, recorded
    calls = len(fake.seen)
    assert calls > 16  # 8 single shots and 4 tournaments on the fake
    # The sim cells recorded synthetic exchanges, marked so nobody takes them for HTTP.
    sim_cell = cell_run_id(original, "single", "s0", 0)
    (sim_event,) = events(settings, sim_cell)
    assert sim_event["synthetic"] is True and sim_event["url"].startswith("sim:")
    assert sim_event["provider_kind"] == "sim" and sim_event["response"]["status"] == 200
    assert all(seen.headers["authorization"] == "Bearer sk-corp-test" for seen in fake.seen)
    fake.close()  # from here on no provider is reachable, and no key is needed
    monkeypatch.delenv(KEY_ENV)

    # A replay that may go to the network still needs the key the route asks for.
    _, no_key = await run(
        client, queue, doc, replay={"run_id": original, "on_miss": "network"}, settings=settings
    )
    assert isinstance(no_key, ApplicationError) and no_key.type == "route.no_auth"

    replay, replayed = await run(client, queue, doc, replay={"run_id": original}, settings=settings)
    assert isinstance(replayed, CampaignResult), replayed
    assert len(fake.seen) == calls  # not one request left the worker
    assert replayed.failed_cells == 4
    assert replayed.decisions == recorded.decisions
    assert replayed.recommendation == recorded.recommendation
    assert replayed.fingerprint == recorded.fingerprint
    assert replayed.spent == recorded.spent

    # Records: equal field for field but the replay's own identity and clock.
    before = records(settings.runs_dir / original)
    after = records(settings.runs_dir / replay)
    assert len(after) == len(before) == 16
    refused = [r for r in after if r["variant"] == "refused"]
    assert all(r["failure_class"] == "runner_threw" for r in refused)
    assert all(
        r["error"].startswith("provider.bad_request: corp answered HTTP 400") for r in refused
    )
    assert all(REFUSAL in r["error"] for r in refused)
    for old, new in zip(before, after, strict=True):
        assert {k: v for k, v in new.items() if k not in IDENTITY} == {
            k: v for k, v in old.items() if k not in IDENTITY
        }
        assert new["run_id"] == cell_run_id(replay, new["variant"], new["scenario"], new["seed"])
    # Each replayed cell recorded its exchanges too (so it passes the capture check), each one
    # pointing at the original call it came from.
    for row in after:
        for event in events(settings, row["run_id"]):
            original_cell = cell_run_id(original, row["variant"], row["scenario"], row["seed"])
            assert event["replayed_from"].startswith(f"{original_cell}/")
            assert {"request", "response"} <= set(event) and "error" not in event

    # The report: byte for byte once run ids are mapped; summary.json also keeps its own times.
    ids = identity_map(doc, original, replay)
    for name in ("report.md", "report.html"):
        old_text = (settings.runs_dir / original / name).read_text()
        new_text = (settings.runs_dir / replay / name).read_text()
        assert new_text == mapped(old_text, ids), name
        assert original in old_text and replay in new_text  # the mapping was exercised
    old_summary = json.loads(
        mapped((settings.runs_dir / original / "summary.json").read_text(), ids)
    )
    new_summary = json.loads((settings.runs_dir / replay / "summary.json").read_text())
    # Its own clock: the replay started after the original was written.
    assert new_summary.pop("started_at") > old_summary.pop("written_at")
    new_summary.pop("written_at"), old_summary.pop("started_at")
    assert new_summary == old_summary


# -- a real miss under each policy -----------------------------------------------------------


async def recorded_seed_0(client: Client, queue: str) -> tuple[dict[str, Any], str]:
    """A campaign recorded on seed 0 only, and its run id; replaying seeds [0, 1] misses on 1."""
    doc = mixed_document(seeds=[0])
    doc["variants"] = doc["variants"][:2]
    doc["scenarios"] = doc["scenarios"][:1]
    original, result = await run(client, queue, doc)
    assert isinstance(result, CampaignResult) and result.failed_cells == 0
    return {**doc, "seeds": [0, 1], "concurrency": 1}, original


async def test_a_miss_under_throw_fails_the_campaign_naming_the_key(
    client: Client, http_queue: tuple[str, Settings], fake: FakeProvider
) -> None:
    queue, settings = http_queue
    doc, original = await recorded_seed_0(client, queue)
    fake.close()
    replay, error = await run(
        client, queue, doc, replay={"run_id": original, "on_miss": "throw"}, settings=settings
    )
    assert isinstance(error, ApplicationError) and error.type == "provider.replay_miss"
    # Cells run in order: the sim single shot on seed 0 is replayed, then seed 1 misses. The
    # prompt is the one recorded on seed 0; only the seed differs, and so does the key.
    (recorded,) = events(settings, cell_run_id(original, "single", "s0", 0))
    seed_1 = child_seed(1, "s0")
    missing = wire_key(recorded["request"]["body"], seed_1)
    assert missing in error.message and f"seed {seed_1}" in error.message
    assert "ask/0/0" in error.message
    rows = records(settings.runs_dir / replay)
    assert [(r["seed"], r["failure_class"]) for r in rows] == [(0, None), (1, "runner_threw")]
    (miss,) = events(settings, cell_run_id(replay, "single", "s0", 1))
    assert miss["replay_miss"] == missing and miss["error"].startswith("replay miss")


async def test_a_tournament_miss_under_throw_stops_the_campaign_with_its_code(
    client: Client, http_queue: tuple[str, Settings], fake: FakeProvider
) -> None:
    queue, settings = http_queue
    doc = mixed_document(seeds=[0], concurrency=1, comparator="single")
    doc["variants"] = [doc["variants"][2], doc["variants"][0]]  # the tournament's cells first
    doc["scenarios"] = doc["scenarios"][:1]
    original, result = await run(client, queue, doc)
    assert isinstance(result, CampaignResult) and result.failed_cells == 0, result
    fake.close()
    replay, error = await run(
        client, queue, {**doc, "seeds": [0, 1]}, replay={"run_id": original}, settings=settings
    )
    assert isinstance(error, ApplicationError) and error.type == "provider.replay_miss"
    # The first generation calls run side by side; whichever misses first names itself.
    assert re.search(r"call initial_generation/\d+/0 ", error.message), error.message
    rows = records(settings.runs_dir / replay)
    assert [(r["variant"], r["seed"], r["failure_class"]) for r in rows] == [
        ("deep-http", 0, None),
        ("deep-http", 1, "runner_threw"),
    ]


async def test_a_judge_scorer_miss_under_throw_stops_the_campaign_too(
    client: Client, http_queue: tuple[str, Settings], fake: FakeProvider
) -> None:
    queue, settings = http_queue
    fake.responder = lambda seen: Reply(body=openai_completion("Fair.\n0.8"))
    doc = document(seeds=[0], min_pairs=2, concurrency=1)
    doc["variants"][1] = {"id": "other", "kind": "single", "config": {"model": "sim:default"}}
    judge = {"kind": "judge", "model": "corp:m", "rubric": "Correct and short."}
    doc["scenarios"] = [{"id": "s0", "task": "Sort.", "scorer": judge}]
    original, result = await run(client, queue, doc)
    assert isinstance(result, CampaignResult) and result.failed_cells == 0, result
    fake.close()
    _, same = await run(client, queue, doc, replay={"run_id": original}, settings=settings)
    assert isinstance(same, CampaignResult) and same.failed_cells == 0, same  # judged from tape
    # Another rubric is another judge prompt: the recording has no answer for it.
    doc["scenarios"][0]["scorer"]["rubric"] = "Correct, short and documented."
    replay, error = await run(client, queue, doc, replay={"run_id": original}, settings=settings)
    assert isinstance(error, ApplicationError) and error.type == "provider.replay_miss"
    assert "call campaign_judge/0/0" in error.message
    (row,) = records(settings.runs_dir / replay)
    assert row["failure_class"] == "scorer_failed"
    assert row["error"].startswith("judge call failed: provider.replay_miss:")


async def test_a_plan_miss_under_throw_stops_the_campaign_with_its_code(
    client: Client, settings: Settings, worker_queue: str
) -> None:
    """A plan cell's miss fails its PlanRun with the closed reason ``dispatch-dead``; the cell
    tells the miss by the failure's structured cause, as a single shot's code tells it."""
    loaded = load(str(PLAN_EXAMPLE))
    assert loaded.document is not None
    doc = loaded.document.model_dump(mode="json", by_alias=True)
    doc |= {"seeds": [0], "concurrency": 1, "min_pairs": 2}
    doc["variants"] = doc["variants"][::-1]  # the plan's cells first
    doc["scenarios"] = doc["scenarios"][:1]
    original, result = await run(client, worker_queue, doc)
    assert isinstance(result, CampaignResult) and result.failed_cells == 0, result
    replay, error = await run(
        client,
        worker_queue,
        {**doc, "seeds": [0, 1]},
        replay={"run_id": original},
        settings=settings,
    )
    assert isinstance(error, ApplicationError) and error.type == "provider.replay_miss", error
    assert "call draft/0/0" in error.message and f"seed {child_seed(1, 'lis')}" in error.message
    rows = records(settings.runs_dir / replay)
    assert [(r["variant"], r["seed"], r["failure_class"]) for r in rows] == [
        ("revise", 0, None),
        ("revise", 1, "runner_threw"),
    ]
    assert rows[1]["error"].startswith("dispatch-dead: draft: provider.replay_miss: ")


async def test_an_error_that_only_quotes_a_miss_is_the_cells_own_failure(
    client: Client, http_queue: tuple[str, Settings], fake: FakeProvider
) -> None:
    """A server whose refusal merely says ``provider.replay_miss:`` fails its cell, not the
    campaign: a miss is told by the error's type, never by its text."""
    queue, settings = http_queue
    quoted = "provider.replay_miss: this text is the server's"
    fake.responder = lambda seen: Reply(status=400, body={"error": {"message": quoted}})
    doc = document(seeds=[0], min_pairs=2, concurrency=1)
    doc["variants"][1] = {"id": "http", "kind": "single", "config": {"model": "corp:m"}}
    doc["scenarios"] = doc["scenarios"][:1]
    run_id, result = await run(client, queue, doc)
    assert isinstance(result, CampaignResult) and result.failed_cells == 1, result
    (row,) = [r for r in records(settings.runs_dir / run_id) if r["variant"] == "http"]
    assert row["failure_class"] == "runner_threw"
    assert row["error"].startswith("provider.bad_request: ") and quoted in row["error"]


async def test_no_route_or_join_absorbs_a_plan_miss(
    client: Client, settings: Settings, worker_queue: str
) -> None:
    """A miss that an ``on_fail`` route or an ``any`` join would absorb still fails the run:
    going on would make a run the recording never was. The failure carries the miss's code."""

    # The recording holds "Answer one.", "Rescue." and a fan-out over one item. The replay asks
    # "Answer two." (a miss) routed on to "Rescue." (recorded), and the fan-out over two items
    # (the first recorded, the second a miss) joined by ``any``.
    def fanout(*items: str) -> list[dict[str, Any]]:
        over = {"over": list(items), "chain": ["fan.one"], "join": "any"}
        return [{"id": "fan", "kind": "fanout", "fanout": over}, agent("fan.one", "Answer.")]

    recorded = plan_doc(agent("a", "Answer one."), agent("b", "Rescue."), *fanout("one"))
    routed = plan_doc(agent("a", "Answer two.", on_fail="rescue"), agent("rescue", "Rescue."))
    joined = plan_doc(*fanout("one", "two"), budget={"calls": 2})  # a call per item
    original = await run_plan(client, worker_queue, recorded)
    calls = replaying(settings, original.run_id)
    for plan in (routed, joined):
        error = await plan_failure(client, worker_queue, plan, calls=calls)
        assert error.type == "dispatch-dead" and "provider.replay_miss: " in error.message
        assert PlanFailureDetail.of(error.details).cause == "provider.replay_miss"
    # Any other failed call is the step's to route, as before: a miss under fail-closed is an
    # HTTP 599, and the run goes on to the rescue step, whose prompt now says why it was routed
    # there (a text the recording never held), so its own call is the run's end.
    closed = calls.model_copy(
        update={"replay": WireReplay(run_id=original.run_id, on_miss="fail-closed")}
    )
    error = await plan_failure(client, worker_queue, routed, calls=closed)
    assert error.type == "dispatch-dead", error
    assert error.message.startswith("rescue: provider.replay_closed: HTTP 599"), error.message


async def test_a_miss_under_fail_closed_is_a_599_the_cell_records(
    client: Client, http_queue: tuple[str, Settings], fake: FakeProvider
) -> None:
    queue, settings = http_queue
    doc, original = await recorded_seed_0(client, queue)
    fake.close()
    replay, result = await run(
        client, queue, doc, replay={"run_id": original, "on_miss": "fail-closed"}, settings=settings
    )
    assert isinstance(result, CampaignResult), result
    rows = {(r["variant"], r["seed"]): r for r in records(settings.runs_dir / replay)}
    for variant in ("single", "http"):
        assert rows[(variant, 0)]["failure_class"] is None
        failed = rows[(variant, 1)]
        assert failed["failure_class"] == "runner_threw"
        assert failed["error"].startswith("provider.replay_closed: HTTP 599")
        (event,) = events(settings, failed["run_id"])
        assert event["response"]["status"] == 599 and event["synthetic"] is True
    assert result.failed_cells == 2


async def test_a_miss_under_network_asks_the_provider(
    client: Client, http_queue: tuple[str, Settings], fake: FakeProvider
) -> None:
    queue, settings = http_queue
    doc, original = await recorded_seed_0(client, queue)
    calls = len(fake.seen)
    replay, result = await run(
        client, queue, doc, replay={"run_id": original, "on_miss": "network"}, settings=settings
    )
    assert isinstance(result, CampaignResult) and result.failed_cells == 0, result
    # Seed 0 came from the recording; seed 1's HTTP cell went out (one request), its sim cell
    # was simulated.
    assert len(fake.seen) == calls + 1
    assert fake.seen[-1].call_id.startswith(cell_run_id(replay, "http", "s0", 1) + "/")
    for variant in ("single", "http"):
        (hit,) = events(settings, cell_run_id(replay, variant, "s0", 0))
        (live,) = events(settings, cell_run_id(replay, variant, "s0", 1))
        assert "replayed_from" in hit and "replayed_from" not in live


# -- the CLI ---------------------------------------------------------------------------------


@pytest.mark.slow  # tens of seconds: started first (tests/conftest.py)
async def test_the_cli_and_the_temporal_cli_replay_a_plan_campaign(
    client: Client, settings: Settings, server_address: str, worker_queue: str
) -> None:
    # A plan variant (PlanRun cells) against a sim single shot, recorded by ``ponder``.
    loaded = load(str(PLAN_EXAMPLE))
    assert loaded.document is not None
    doc = loaded.document.model_dump(mode="json", by_alias=True)
    path = str(PLAN_EXAMPLE)
    tag = uuid.uuid4().hex[:6]  # workflow ids are unique on the session's server
    rec, rep, tmp = f"camp-rec-{tag}", f"camp-rep-{tag}", f"camp-tmp-{tag}"
    env = cli_env(settings.home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=worker_queue)
    recorded = await ponder("campaign", "run", path, "--run-id", rec, env=env)
    assert recorded.code == 0, recorded.err
    replayed = await ponder(
        "campaign", "run", path, "--run-id", rep, "--replay", rec,
        "--on-miss", "fail-closed", env=env,
    )  # fmt: skip
    assert replayed.code == 0, replayed.err
    assert f"campaign {rep} replays {rec} (on a miss: fail-closed)" in replayed.err
    assert replayed.out == recorded.out  # the same recommendation and decisions
    saved = json.loads((settings.runs_dir / rep / "campaign.json").read_text())
    assert saved["calls"]["replay"] == {"run_id": rec, "on_miss": "fail-closed"}
    # The same through the plain temporal CLI: the input fields do it (the recorded run's read
    # token, which the ponder CLI read from the run store itself).
    calls = {"replay": {"run_id": rec}, "read_tokens": {rec: read_token(settings.runs_dir, rec)}}
    code, out = await temporal(
        server_address, "workflow", "start", "--type", CAMPAIGN, "--task-queue", worker_queue,
        "--workflow-id", tmp, "--input", json.dumps(doc | {"calls": calls}),
    )  # fmt: skip
    assert code == 0, out
    await client.get_workflow_handle(tmp, result_type=CampaignResult).result()
    old = (settings.runs_dir / rec / "report.md").read_text()
    before = without_identity(records(settings.runs_dir / rec))
    for replay in (rep, tmp):
        ids = identity_map(doc, rec, replay)
        assert (settings.runs_dir / replay / "report.md").read_text() == mapped(old, ids)
        rows = records(settings.runs_dir / replay)
        assert without_identity(rows) == before
        # Every call came from the recording (plan steps included), none was simulated again.
        for row in rows:
            lines = events(settings, row["run_id"])
            assert lines and all("replayed_from" in e for e in lines)
        assert sum(r["variant"] == "revise" for r in rows) == 4


def test_the_cli_refuses_a_replay_of_itself_or_of_a_path_before_it_connects(
    tmp_path: Path,
) -> None:
    """Checked on the arguments, before any server or recording is looked at: in this process
    (``ponder_here``), a ``ponder`` process each would cost most of a second of CPU."""
    path, env = str(PLAN_EXAMPLE), cli_env(tmp_path / "home")
    same = ponder_here(
        "campaign", "run", path, "--run-id", "camp-rec", "--replay", "camp-rec", env=env
    )
    assert same.code == 2 and "--replay names the recorded campaign" in same.err
    bad = ponder_here("campaign", "run", path, "--replay", "../camp-rec", env=env)
    assert bad.code == 2 and "run id '../camp-rec' must match" in bad.err


# -- sim raw events and the capture check ---------------------------------------------------


async def test_sim_calls_of_an_http_variant_count_as_captured_and_replay(
    client: Client, http_queue: tuple[str, Settings], fake: FakeProvider
) -> None:
    queue, settings = http_queue
    doc = document(seeds=[0], integrity="throw", min_pairs=2)
    doc["scenarios"] = doc["scenarios"][:1]
    # Candidates over HTTP, a simulated judge: the capture check covers every call (span) of
    # the cell, the judge's by its synthetic exchange (before sim events it was an orphan span).
    mixed = {"profile": "quick", "model": "corp:m", "models": {"judge": "sim:default"}}
    doc["variants"][1] = {"id": "deep", "kind": "tournament", "config": mixed}
    original, result = await run(client, queue, doc)
    assert isinstance(result, CampaignResult) and result.failed_cells == 0, result
    (row,) = [r for r in records(settings.runs_dir / original) if r["variant"] == "deep"]
    assert row["integrity_issues"] == [] and row["failure_class"] is None
    lines = events(settings, row["run_id"])
    synthetic = [e for e in lines if e.get("synthetic")]
    assert synthetic and all(e["provider_kind"] == "sim" for e in synthetic)
    assert len({e["call_id"] for e in lines}) == row["calls"] > len(synthetic)
    fake.close()
    replay, replayed = await run(client, queue, doc, replay={"run_id": original}, settings=settings)
    assert isinstance(replayed, CampaignResult) and replayed.failed_cells == 0, replayed
    assert without_identity(records(settings.runs_dir / replay)) == without_identity(
        records(settings.runs_dir / original)
    )


# -- outside campaigns -----------------------------------------------------------------------


async def test_an_ask_replays_from_its_recording_by_wire_key(
    client: Client, settings: Settings, worker_queue: str
) -> None:
    question = "Explain retries."
    recorded = await ask(
        client, worker_queue, AskInput(question=question, model="sim:default", seed=4)
    )
    source = recorded.run_id
    replay = replaying(settings, source)
    again = await ask(
        client,
        worker_queue,
        AskInput(question=question, model="sim:default", seed=4, calls=replay),
    )
    assert again.response.text == recorded.response.text
    (event,) = events(settings, again.run_id)
    assert event["replayed_from"] == f"{source}/ask/0/0" and event["synthetic"] is True
    # Another question is another wire request: a miss, coded, naming the call.
    error = await failure_of(
        client, worker_queue, AskInput(question="Other.", model="sim:default", seed=4, calls=replay)
    )
    assert error.type == "provider.replay_miss" and "call ask/0/0" in error.message


async def test_provider_shapes_replay_offline_json_mode_fallback_and_messages_api(
    client: Client, settings: Settings
) -> None:
    """An endpoint that refuses JSON mode (the fallback answered) and the Messages API (its
    separate system field) replay from their recordings with the server gone."""
    chat, messages = FakeProvider(), FakeProvider()
    chat.replies = [Reply(400, {"error": {"message": "response_format is not supported"}})]
    messages.responder = lambda seen: Reply(body=anthropic_message("From the Messages API."))
    settings = with_endpoint(settings, "chat", Endpoint(kind="openai", base_url=chat.url))
    settings = with_endpoint(settings, "msgs", Endpoint(kind="anthropic", base_url=messages.url))
    queue = f"test-{uuid.uuid4()}"
    asks = [
        AskInput(question="Give JSON.", model="chat:m", json_mode=True, seed=2),
        AskInput(question="Say hi.", model="msgs:claude", system="Be brief.", seed=2),
    ]
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        recorded = [await ask(client, queue, a) for a in asks]
        chat.close()
        messages.close()
        for original, input in zip(recorded, asks, strict=True):
            calls = replaying(settings, original.run_id)
            again = await ask(client, queue, input.model_copy(update={"calls": calls}))
            assert again.response.text == original.response.text
            assert again.response.usage == original.response.usage
            assert again.response.model == original.response.model
            # The refused JSON-mode request counts as the fallback it was, not as the answer.
            assert again.response.transport_retries == original.response.transport_retries
            (event,) = events(settings, again.run_id)
            assert event["replayed_from"].startswith(f"{original.run_id}/")
    assert recorded[0].response.transport_retries == 1
    assert recorded[1].response.text == "From the Messages API."
