"""Training pairs (plans-part2.md section 11): the pure record and the at-most-once writer.

The record builder (``workflows.plan.training``) is pure; the writer (``append_pair`` in
``activities.plan.training``) is exercised on a real directory: retries, two runs backfilling
the same pair, 8 racing threads, a torn last line, a crash between line and key.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from activities.plan.training import append_pair
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


def lines(root: Path, plan: str = "Release Notes", step: str = "draft") -> list[dict[str, object]]:
    path = root / safe_name(plan) / f"{safe_name(step)}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def keys(root: Path, plan: str = "Release Notes", step: str = "draft") -> list[str]:
    path = root / safe_name(plan) / f"{safe_name(step)}.jsonl.keys"
    return path.read_text().split()


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
    assert append_pair(tmp_path, record).outcome == "written"
    assert append_pair(tmp_path, record).outcome == "dup"
    assert len(lines(tmp_path)) == 1 and keys(tmp_path) == [record.key]
    assert (tmp_path / "README.md").read_text() == PRIVACY_NOTE
    other = pair_input(output="second draft")
    assert append_pair(tmp_path, other).outcome == "written"
    assert [r["output"] for r in lines(tmp_path)] == ["a draft", "second draft"]


def test_two_runs_backfilling_the_same_pair_write_it_once(tmp_path: Path) -> None:
    first = pair_input(run_id="run-a", ts="2026-03-01T00:00:00+00:00", mode="backfill")
    second = pair_input(run_id="run-b", ts="2026-03-02T00:00:00+00:00", mode="backfill")
    assert append_pair(tmp_path, first).outcome == "written"
    assert append_pair(tmp_path, second).outcome == "dup"
    # The same pair captured live by a third run is the same pair again.
    assert append_pair(tmp_path, pair_input(run_id="run-c")).outcome == "dup"
    (only,) = lines(tmp_path)
    assert (only["run_id"], only["capture_mode"], only["resumed"]) == ("run-a", "backfill", True)


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
                outcomes.append(append_pair(tmp_path, record).outcome)
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
    assert sorted(keys(tmp_path)) == sorted(r["key"] for r in written)  # type: ignore[type-var]


def test_a_torn_last_line_is_dropped_before_the_next_append(tmp_path: Path) -> None:
    record = pair_input()
    append_pair(tmp_path, record)
    path = tmp_path / safe_name("Release Notes") / f"{safe_name('draft')}.jsonl"
    torn = pair_input(output="cut short")
    with path.open("a") as f:
        f.write(torn.line[:40])  # a write cut short by a crash: no newline, no key
    result = append_pair(tmp_path, torn)
    assert result.outcome == "written"
    assert result.repaired == ["a torn last line was dropped"]
    assert [r["output"] for r in lines(tmp_path)] == ["a draft", "cut short"]
    assert keys(tmp_path) == [record.key, torn.key]


def test_a_crash_between_line_and_key_neither_loses_nor_doubles_the_pair(tmp_path: Path) -> None:
    append_pair(tmp_path, pair_input())
    crashed = pair_input(output="written, key lost")
    path = tmp_path / safe_name("Release Notes") / f"{safe_name('draft')}.jsonl"
    with path.open("a") as f:
        f.write(crashed.line + "\n")  # the line landed, the process died before its key
    result = append_pair(tmp_path, crashed)  # the retry
    assert result.outcome == "dup"
    assert result.repaired == ["the last line's missing key was restored"]
    assert len(lines(tmp_path)) == 2 and crashed.key in keys(tmp_path)


def test_a_torn_key_is_dropped_and_the_key_restored(tmp_path: Path) -> None:
    record = pair_input()
    append_pair(tmp_path, record)
    keys_path = tmp_path / safe_name("Release Notes") / f"{safe_name('draft')}.jsonl.keys"
    keys_path.write_text(record.key[:20])  # the key write was cut short
    result = append_pair(tmp_path, record)
    assert result.outcome == "dup"
    assert result.repaired == [
        "a torn last key was dropped",
        "the last line's missing key was restored",
    ]
    assert keys(tmp_path) == [record.key] and len(lines(tmp_path)) == 1


def test_a_symlink_planted_in_the_training_directory_is_not_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "training", tmp_path / "outside.jsonl"
    outside.write_text("")
    (root / safe_name("Release Notes")).mkdir(parents=True)
    (root / safe_name("Release Notes") / f"{safe_name('draft')}.jsonl").symlink_to(outside)
    with pytest.raises(OSError):
        append_pair(root, pair_input())
    assert outside.read_text() == ""
    plan_link = root / safe_name("Other")
    plan_link.symlink_to(tmp_path)
    with pytest.raises(OSError):
        append_pair(root, pair_input(plan="Other"))
    assert not list(tmp_path.glob("*.jsonl.keys"))


def test_bad_input_is_refused(tmp_path: Path) -> None:
    record = pair_input()
    with pytest.raises(ValueError, match="key"):
        append_pair(tmp_path, record.model_copy(update={"key": "../x"}))
    with pytest.raises(ValueError, match="one line"):
        append_pair(tmp_path, record.model_copy(update={"line": "a\nb"}))
    assert not os.path.exists(tmp_path / safe_name("Release Notes"))


def test_repair_reaches_back_past_a_long_torn_line(tmp_path: Path) -> None:
    """The writer reads the file's end in small steps first (64 KiB); a torn line longer than
    that is still dropped whole, and the truncated long record before it keyed."""
    long = pair_input(output="y" * 200_000)  # its line keeps 48,000 characters and a marker
    path = tmp_path / safe_name("Release Notes") / f"{safe_name('draft')}.jsonl"
    append_pair(tmp_path, pair_input())
    with path.open("a") as f:
        f.write(long.line + "\n")  # a crash after the line, before its key
        f.write("z" * 70_000)  # then a torn line, longer than one read
    result = append_pair(tmp_path, long)
    assert result.outcome == "dup"
    assert result.repaired == [
        "a torn last line was dropped",
        "the last line's missing key was restored",
    ]
    assert [len(r["output"]) > 40_000 for r in lines(tmp_path)] == [False, True]
