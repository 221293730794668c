"""Training pairs (docs/plans.md, "Training pairs"): the pure record and the at-most-once writer.

The record builder (``workflows.plan.training``) is pure; the writer (``append_pair`` in
``activities.plan.training``) is exercised on a real directory: retries, a repeated backfill,
two runs with one plan name kept apart, 8 racing threads, a torn last line, a crash between line
and key.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.plan.training import TrainingActivities, append_pair
from activities.run_store import RUN_ID_IN_USE, RunStore
from workflows.plan.training import (
    MAX_IO_CHARS,
    PRIVACY_NOTE,
    AppendTrainingPairInput,
    Provenance,
    Unserializable,
    build_pair,
    pair_key,
    pair_line,
    safe_name,
    truncate_pair,
)

RUN = "run-1"
PROVENANCE = Provenance(model="sim:default", family="sim", role="draft", tokens=10, minutes=0.01)


def pair_input(
    step: str = "draft",
    prompt: str = "Draft it.",
    output: str = "a draft",
    *,
    run_id: str = "run-1",
    ts: str = "2026-01-01T00:00:00+00:00",
    mode: str = "capture",
    plan: str = "Release Notes",
) -> AppendTrainingPairInput:
    pair = build_pair(
        plan=plan,
        run_id=run_id,
        step=step,
        item=None,
        ts=ts,
        input=prompt,
        output=output,
        provenance=PROVENANCE,
        capture_mode=mode,  # type: ignore[arg-type]
        resumed=mode == "backfill",
    )
    return AppendTrainingPairInput(plan=plan, step=step, line=pair_line(pair), key=pair.key)


def step_file(root: Path, plan: str = "Release Notes", step: str = "draft", run: str = RUN) -> Path:
    return root / safe_name(plan) / run / f"{safe_name(step)}.jsonl"


def lines(root: Path, plan: str = "Release Notes", run: str = RUN) -> list[dict[str, Any]]:
    path = step_file(root, plan, run=run)
    return [json.loads(line) for line in path.read_text().splitlines()]


def keys(root: Path, plan: str = "Release Notes") -> list[str]:
    return step_file(root, plan).with_suffix(".jsonl.keys").read_text().split()


# -- the record (pure) ----------------------------------------------------------------------


def test_safe_names_cannot_leave_the_directory_and_stay_distinct() -> None:
    for name in ("../../etc", "a/b", "..", "/", "Release Notes", "fan.one", "x" * 300):
        safe = safe_name(name)
        assert "/" not in safe and ".." not in safe and safe not in ("", ".", "..")
        assert len(safe) <= 64 + 9
    assert safe_name("fan.one") != safe_name("fan-one") != safe_name("fan_one")
    assert safe_name("Plan") != safe_name("plan")
    assert safe_name("release").startswith("release-")


def test_the_key_is_the_pair_not_the_run_or_time() -> None:
    a = pair_input(run_id="run-1", ts="2026-01-01T00:00:00+00:00")
    b = pair_input(run_id="run-2", ts="2026-02-02T00:00:00+00:00", mode="backfill")
    assert a.key == b.key == pair_key("draft", "Draft it.", "a draft")
    assert pair_input(output="another draft").key != a.key
    assert pair_input(step="review").key != a.key


def test_the_record_has_the_ponder_trainpair_fields() -> None:
    record = json.loads(pair_input().line)
    assert list(record) == [
        "schema",
        "plan",
        "run_id",
        "step",
        "item",
        "ts",
        "input",
        "output",
        "evaluation",
        "provenance",
        "truncated",
        "capture_mode",
        "resumed",
        "key",
    ]
    assert record["schema"] == "ponder-trainpair/1"
    assert record["evaluation"] == {"grade": None, "graded_by": None, "lessons_injected": []}
    assert record["truncated"] is None and record["capture_mode"] == "capture"


def test_truncation_keeps_the_shorter_side_whole_within_half() -> None:
    prompt, output = "p" * 60_000, "o" * 1_000
    kept_in, kept_out, truncated = truncate_pair(prompt, output)
    assert kept_out == output
    assert kept_in.startswith("p" * (MAX_IO_CHARS - 1_000))
    assert "…[TRUNCATED 13000 chars — sha256=" in kept_in
    assert truncated is not None
    assert (truncated.input_chars, truncated.output_chars) == (60_000, 1_000)
    # Both over half: half each.
    kept_in, kept_out, truncated = truncate_pair("p" * 30_000, "o" * 30_000)
    assert kept_in.startswith("p" * 24_000) and "TRUNCATED 6000 chars" in kept_in
    assert kept_out.startswith("o" * 24_000) and "TRUNCATED 6000 chars" in kept_out
    # Within the cap: untouched.
    assert truncate_pair("p" * 24_000, "o" * 24_000)[2] is None


def test_the_key_covers_the_full_texts_not_the_truncated_ones() -> None:
    long = "x" * 50_000
    a = build_pair(
        plan="p", run_id="r", step="s", item=None, ts="t", input=long + "a", output="o",
        provenance=PROVENANCE,
    )  # fmt: skip
    b = build_pair(
        plan="p", run_id="r", step="s", item=None, ts="t", input=long + "b", output="o",
        provenance=PROVENANCE,
    )  # fmt: skip
    kept = a.input.split("\n…")[0]
    assert kept == b.input.split("\n…")[0] == "x" * (MAX_IO_CHARS - 1)  # the same text kept
    assert a.key != b.key


def test_text_that_is_not_unicode_is_unserializable() -> None:
    pair = build_pair(
        plan="p", run_id="r", step="s", item=None, ts="t", input="ok", output="bad \ud800",
        provenance=PROVENANCE,
    )  # fmt: skip
    with pytest.raises(Unserializable):
        pair_line(pair)


# -- the writer --------------------------------------------------------------------------


def test_a_retried_append_writes_one_line(tmp_path: Path) -> None:
    record = pair_input()
    assert append_pair(tmp_path, record, RUN).outcome == "written"
    assert append_pair(tmp_path, record, RUN).outcome == "dup"
    assert len(lines(tmp_path)) == 1 and keys(tmp_path) == [record.key]
    assert (tmp_path / "README.md").read_text() == PRIVACY_NOTE
    other = pair_input(output="second draft")
    assert append_pair(tmp_path, other, RUN).outcome == "written"
    assert [r["output"] for r in lines(tmp_path)] == ["a draft", "second draft"]


def test_a_repeated_backfill_writes_the_pair_once(tmp_path: Path) -> None:
    first = pair_input(ts="2026-03-01T00:00:00+00:00", mode="backfill")
    again = pair_input(ts="2026-03-02T00:00:00+00:00", mode="backfill")
    assert append_pair(tmp_path, first, RUN).outcome == "written"
    assert append_pair(tmp_path, again, RUN).outcome == "dup"
    # The same pair captured live later in the run is the same pair again.
    assert append_pair(tmp_path, pair_input(), RUN).outcome == "dup"
    (only,) = lines(tmp_path)
    assert (only["capture_mode"], only["resumed"], only["ts"]) == (
        "backfill",
        True,
        "2026-03-01T00:00:00+00:00",
    )


def test_a_run_never_appends_to_another_runs_file_under_the_same_plan_name(
    tmp_path: Path,
) -> None:
    """The plan name is input: a second run giving the first one's name gets its own file, and
    ``dup`` never says what the other run captured."""
    assert append_pair(tmp_path, pair_input(), "victim").outcome == "written"
    poison = pair_input(output="poisoned", run_id="intruder")
    same = pair_input(run_id="intruder")
    assert append_pair(tmp_path, poison, "intruder").outcome == "written"
    assert append_pair(tmp_path, same, "intruder").outcome == "written"  # not "dup"
    assert [r["output"] for r in lines(tmp_path, run="victim")] == ["a draft"]
    assert [r["output"] for r in lines(tmp_path, run="intruder")] == ["poisoned", "a draft"]
    for bad in ("../victim", ".claims", ""):
        with pytest.raises(ValueError):
            append_pair(tmp_path, poison, bad)


def test_eight_racing_threads_write_each_pair_once(tmp_path: Path) -> None:
    records = [pair_input(output=f"draft {n}") for n in range(25)]
    start = threading.Barrier(8)
    outcomes: list[str] = []
    errors: list[BaseException] = []

    def writer(offset: int) -> None:
        start.wait()
        try:
            for n in range(len(records)):
                record = records[(n + offset * 3) % len(records)]
                outcomes.append(append_pair(tmp_path, record, RUN).outcome)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert outcomes.count("written") == 25 and outcomes.count("dup") == 7 * 25
    written = lines(tmp_path)
    assert sorted(r["output"] for r in written) == sorted(f"draft {n}" for n in range(25))
    assert sorted(keys(tmp_path)) == sorted(r["key"] for r in written)


def test_a_torn_last_line_is_dropped_before_the_next_append(tmp_path: Path) -> None:
    record = pair_input()
    append_pair(tmp_path, record, RUN)
    path = step_file(tmp_path)
    torn = pair_input(output="cut short")
    with path.open("a") as f:
        f.write(torn.line[:40])  # a write cut short by a crash: no newline, no key
    result = append_pair(tmp_path, torn, RUN)
    assert result.outcome == "written"
    assert result.repaired == ["a torn last line was dropped"]
    assert [r["output"] for r in lines(tmp_path)] == ["a draft", "cut short"]
    assert keys(tmp_path) == [record.key, torn.key]


def test_a_crash_between_line_and_key_neither_loses_nor_doubles_the_pair(tmp_path: Path) -> None:
    append_pair(tmp_path, pair_input(), RUN)
    crashed = pair_input(output="written, key lost")
    path = step_file(tmp_path)
    with path.open("a") as f:
        f.write(crashed.line + "\n")  # the line landed, the process died before its key
    result = append_pair(tmp_path, crashed, RUN)  # the retry
    assert result.outcome == "dup"
    assert result.repaired == ["the last line's missing key was restored"]
    assert len(lines(tmp_path)) == 2 and crashed.key in keys(tmp_path)


def test_a_torn_key_is_dropped_and_the_key_restored(tmp_path: Path) -> None:
    record = pair_input()
    append_pair(tmp_path, record, RUN)
    keys_path = step_file(tmp_path).with_suffix(".jsonl.keys")
    keys_path.write_text(record.key[:20])  # the key write was cut short
    result = append_pair(tmp_path, record, RUN)
    assert result.outcome == "dup"
    assert result.repaired == [
        "a torn last key was dropped",
        "the last line's missing key was restored",
    ]
    assert keys(tmp_path) == [record.key] and len(lines(tmp_path)) == 1


def test_a_symlink_planted_in_the_training_directory_is_not_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "training", tmp_path / "outside.jsonl"
    outside.write_text("")
    step_file(root).parent.mkdir(parents=True)
    step_file(root).symlink_to(outside)
    with pytest.raises(OSError):
        append_pair(root, pair_input(), RUN)
    assert outside.read_text() == ""
    plan_link = root / safe_name("Other")
    plan_link.symlink_to(tmp_path)
    with pytest.raises(OSError):
        append_pair(root, pair_input(plan="Other"), RUN)
    assert not list(tmp_path.glob("*.jsonl.keys"))
    run_link = root / safe_name("Release Notes") / "run-2"
    run_link.symlink_to(tmp_path)
    with pytest.raises(OSError):
        append_pair(root, pair_input(), "run-2")
    assert not (tmp_path / step_file(root).name).exists()


def test_bad_input_is_refused(tmp_path: Path) -> None:
    record = pair_input()
    with pytest.raises(ValueError, match="key"):
        append_pair(tmp_path, record.model_copy(update={"key": "../x"}), RUN)
    with pytest.raises(ValueError, match="one line"):
        append_pair(tmp_path, record.model_copy(update={"line": "a\nb"}), RUN)
    assert not os.path.exists(tmp_path / safe_name("Release Notes"))


def test_repair_reaches_back_past_a_long_torn_line(tmp_path: Path) -> None:
    """The writer reads the file's end in small steps first (64 KiB); a torn line longer than
    that is still dropped whole, and the truncated long record before it keyed."""
    long = pair_input(output="y" * 200_000)  # its line keeps 48,000 characters and a marker
    path = step_file(tmp_path)
    append_pair(tmp_path, pair_input(), RUN)
    with path.open("a") as f:
        f.write(long.line + "\n")  # a crash after the line, before its key
        f.write("z" * 70_000)  # then a torn line, longer than one read
    result = append_pair(tmp_path, long, RUN)
    assert result.outcome == "dup"
    assert result.repaired == [
        "a torn last line was dropped",
        "the last line's missing key was restored",
    ]
    assert [len(r["output"]) > 40_000 for r in lines(tmp_path)] == [False, True]


async def test_the_activity_writes_only_under_the_calling_workflow_and_its_claim(
    tmp_path: Path,
) -> None:
    """The run directory is the workflow id Temporal names (never input), and that id must be
    claimed by the writer's execution chain: a later execution reusing a closed run's id is
    refused before it appends a line."""
    root = tmp_path / "training"
    activities = TrainingActivities(root, RunStore(tmp_path / "runs"))
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, workflow_id="victim")
    first = pair_input().model_copy(update={"chain": "chain-1"})
    result = await env.run(activities.append_training_pair, first)
    assert result.file == f"{safe_name('Release Notes')}/victim/{safe_name('draft')}.jsonl"
    reused = pair_input(output="poisoned").model_copy(update={"chain": "chain-2"})
    with pytest.raises(ApplicationError) as info:
        await env.run(activities.append_training_pair, reused)
    assert info.value.type == RUN_ID_IN_USE and info.value.non_retryable
    assert [r["output"] for r in lines(root, run="victim")] == ["a draft"]
    env.info = dataclasses.replace(env.info, workflow_id="../victim")
    with pytest.raises(ApplicationError) as info:
        await env.run(activities.append_training_pair, first)
    assert info.value.type == "run.id_invalid"
