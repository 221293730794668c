"""Direct unit tests of checkpoints (workflows.plan.checkpoints): the book, labels, refusals,
fingerprints, ``checkpoints.json`` and reading a label back from it, and the plan rules."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from workflows.plan.checkpoints import (
    MAX_CHECKPOINTS,
    CheckpointBook,
    RestoredStep,
    Reverted,
    Snapshot,
    check_label,
    checkpoint_errors,
    checkpoints_json,
    fingerprint,
    restore_point,
    revert_refusal,
)
from workflows.plan.model import Plan
from workflows.plan.reasons import Reason


def snap(label: str, **fields: Any) -> Snapshot:
    return Snapshot(
        label=label, seq=fields.pop("seq", 1), committed_at="T", by="operator", **fields
    )


def test_the_book_keeps_first_commit_order_and_counts_room() -> None:
    book = CheckpointBook()
    book.commit(snap("b"))
    book.commit(snap("a"))
    book.commit(snap("b", seq=9))
    assert book.labels() == ["b", "a"]
    snapshot = book.get("b")
    assert snapshot is not None and snapshot.seq == 9
    assert book.get("zz") is None
    full = CheckpointBook()
    for i in range(MAX_CHECKPOINTS - 1):
        full.commit(snap(f"l{i}"))
    assert full.room_for("new")
    assert full.room_for("new", ["l0", "l1"])  # a reserved label already kept takes no room
    assert not full.room_for("new", ["plan"])
    assert full.room_for("plan", ["plan"])  # the plan's own label fits
    full.commit(snap("last"))
    assert not full.room_for("new")
    assert full.room_for("l3")  # a label already kept may be re-committed


def test_check_label_and_revert_refusals() -> None:
    assert check_label("ok.label:1-_") is None
    assert check_label("x" * 64) is None
    refusal = check_label("x" * 65)
    assert refusal is not None and refusal.reason == Reason.INVALID_LABEL
    refusal = check_label("bad label")
    assert refusal is not None
    assert refusal.message == (
        'label "bad label" must match ^[A-Za-z0-9_.:-]{1,64}$ (1-64 letters, digits, _ . : -); '
        "fix: rename it"
    )
    long = check_label("é" * 100)
    # the label as JSON, cut at 80 characters
    assert long is not None and long.message.startswith('label "' + "\\u00e9" * 13 + "\\ must")
    assert check_label("") is not None

    book = CheckpointBook()
    bad = revert_refusal(book, "no good", busy=None)
    assert bad is not None and bad.reason == Reason.INVALID_LABEL
    missing = revert_refusal(book, "x", busy=None)
    assert missing is not None and missing.reason == Reason.CHECKPOINT_NOT_FOUND
    assert missing.message == "no checkpoint 'x' (labels in commit order: none committed yet)"
    book.commit(snap("b"))
    book.commit(snap("a"))
    missing = revert_refusal(book, "x", busy="a step runs")
    assert missing is not None
    assert missing.message == "no checkpoint 'x' (labels in commit order: b, a)"
    busy = revert_refusal(book, "a", busy="a step runs")
    assert busy is not None and busy.reason == Reason.CHECKPOINT_BUSY
    assert busy.message == (
        "cannot revert while a step runs; a revert waits for a settled moment (a gate, a pause, "
        "a budget or consumer wait); fix: try again then"
    )
    assert revert_refusal(book, "a", busy=None) is None
    assert Reverted("a").label == "a" and str(Reverted("a")) == "a"


def test_fingerprint_frames_each_part() -> None:
    digest = hashlib.sha256()
    for part in ("s", "m:x", {"b": "number", "a": "string"}, "é", [1, {"k": "v"}]):
        body = json.dumps(part, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        digest.update(len(body.encode()).to_bytes(8, "big"))
        digest.update(body.encode())
    got = fingerprint(
        "s",
        model="m:x",
        contract={"a": "string", "b": "number"},
        rendered="é",
        deps_outputs=(1, {"k": "v"}),
    )
    assert got == "sha256:" + digest.hexdigest()
    # parts are framed: moving text from one part to the next changes it
    assert fingerprint("ab", model="c", contract=None, rendered="", deps_outputs=[]) != (
        fingerprint("a", model="bc", contract=None, rendered="", deps_outputs=[])
    )


def digest(value: Any) -> str:
    body = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(body.encode()).hexdigest()[:32]


def test_checkpoints_json_stores_each_output_once() -> None:
    book = CheckpointBook()
    book.commit(
        snap(
            "first",
            seq=3,
            outputs={"a": "ö", "b": {"k": 1}, "c": "left"},
            states={"a": "settled", "b": "settled", "c": "failed", "d": "settled"},
            args={"topic": "x"},
            fingerprints={"a": "sha256:fa"},
        )
    )
    book.commit(snap("second", seq=5, outputs={"a": "ö"}, states={"a": "settled"}))
    text = checkpoints_json(book, run_id="r1", plan="p")
    assert text.endswith("}\n") and '"ö"' in text and text.startswith('{\n "schema"')
    assert json.loads(text) == {
        "schema": "ponder-checkpoints/1",
        "run_id": "r1",
        "plan": "p",
        "checkpoints": [
            {
                "label": "first",
                "seq": 3,
                "committed_at": "T",
                "by": "operator",
                "args": {"topic": "x"},
                "steps": {
                    "a": {"output": digest("ö"), "fingerprint": "sha256:fa"},
                    "b": {"output": digest({"k": 1}), "fingerprint": None},
                },
            },
            {
                "label": "second",
                "seq": 5,
                "committed_at": "T",
                "by": "operator",
                "args": {},
                "steps": {"a": {"output": digest("ö"), "fingerprint": None}},
            },
        ],
        "outputs": {digest("ö"): "ö", digest({"k": 1}): {"k": 1}},
    }


def test_restore_point_reads_a_label_back() -> None:
    book = CheckpointBook()
    book.commit(
        snap(
            "first",
            outputs={"a": "A", "b": [1]},
            states={"a": "settled", "b": "settled"},
            args={"topic": "x"},
            fingerprints={"a": "sha256:fa"},
        )
    )
    book.commit(snap("second"))
    text = checkpoints_json(book, run_id="r1", plan="p")
    point, why = restore_point(text, run_id="r1", label="first")
    assert why == "" and point is not None
    assert (point.run_id, point.label, point.plan, point.args) == (
        "r1",
        "first",
        "p",
        {"topic": "x"},
    )
    assert point.steps == {
        "a": RestoredStep(fingerprint="sha256:fa", output="A"),
        "b": RestoredStep(fingerprint=None, output=[1]),
    }
    point, why = restore_point(text, run_id="r1", label="second")
    assert point is not None and point.args == {} and point.steps == {}
    assert restore_point(text, run_id="r1", label="third") == (
        None,
        "checkpoint-not-found: run r1 has no checkpoint 'third' (labels in commit order: "
        "first, second)",
    )


def test_restore_point_refuses_what_it_cannot_read() -> None:
    def why(doc: Any, label: str = "x") -> str:
        text = doc if isinstance(doc, str) else json.dumps(doc)
        point, reason = restore_point(text, run_id="r", label=label)
        assert point is None
        return reason

    head = "input.invalid: run r's checkpoints.json is unreadable ("
    assert why("{").startswith(head)
    assert why([]) == head + "not a ponder-checkpoints/1 document)"
    assert why({"schema": "other"}) == head + "not a ponder-checkpoints/1 document)"
    good = {"schema": "ponder-checkpoints/1"}
    assert why(good) == head + "'outputs')"
    assert why({**good, "outputs": {}}) == head + "'checkpoints')"
    assert why({**good, "outputs": [], "checkpoints": []}) == (
        head + "outputs and checkpoints are malformed)"
    )
    assert why({**good, "outputs": {}, "checkpoints": {}}) == (
        head + "outputs and checkpoints are malformed)"
    )
    assert why({**good, "outputs": {}, "checkpoints": []}) == (
        "checkpoint-not-found: run r has no checkpoint 'x' (labels in commit order: none)"
    )
    assert why({**good, "outputs": {}, "checkpoints": ["junk", {"label": "y"}]}) == (
        "checkpoint-not-found: run r has no checkpoint 'x' (labels in commit order: y)"
    )
    dangling = {
        **good,
        "outputs": {},
        "checkpoints": [{"label": "x", "steps": {"a": {"output": "k"}}}],
    }
    assert why(dangling) == "input.invalid: checkpoint 'x' of run r is malformed ('k')"
    bad_args = {**good, "outputs": {}, "checkpoints": [{"label": "x", "args": 5}]}
    assert why(bad_args).startswith("input.invalid: checkpoint 'x' of run r is malformed (")
    # the first entry of a label wins; the plan defaults to ""
    twice = {
        **good,
        "outputs": {"k": 1},
        "checkpoints": [
            {"label": "x", "args": {"n": 1}, "steps": {"a": {"output": "k"}}},
            {"label": "x", "args": {"n": 2}},
        ],
    }
    point, _ = restore_point(json.dumps(twice), run_id="r", label="x")
    assert point is not None and point.args == {"n": 1} and point.plan == ""
    assert point.steps == {"a": RestoredStep(fingerprint=None, output=1)}


def test_checkpoint_errors() -> None:
    p = Plan.model_validate(
        {
            "schema": "ponder-plan/1",
            "name": "p",
            "steps": [
                {"id": "a", "kind": "agent", "prompt": "x", "checkpoint": "one"},
                {"id": "fan", "kind": "fanout", "fanout": {"over": [1], "chain": ["m"]}},
                {"id": "m", "kind": "agent", "prompt": "x", "checkpoint": "two"},
                {"id": "b", "kind": "agent", "prompt": "x", "checkpoint": "one"},
                {"id": "c", "kind": "agent", "prompt": "x"},
            ],
        }
    )
    steps: list[Any] = [*p.steps, None]
    errors = checkpoint_errors(steps, {"m": 1, "a": 0})
    assert [(e.code, e.path, e.message) for e in errors] == [
        (
            "checkpoint.not_top_level",
            "steps[2].checkpoint",
            "'m' settles inside its fan-out, which is what a checkpoint can commit; fix: put "
            "the checkpoint on the fan-out",
        ),
        (
            "checkpoint.duplicate",
            "steps[3].checkpoint",
            "label 'one' is already steps[0]'s; a revert to it would be ambiguous; fix: give "
            "each checkpoint its own label",
        ),
    ]
    body = checkpoint_errors(p.steps[:1], {}, top_level=False)
    assert [(e.code, e.message) for e in body] == [
        (
            "checkpoint.not_top_level",
            "'a' settles inside its run step, which is what a checkpoint can commit; fix: put "
            "the checkpoint on the run step",
        )
    ]
    many = Plan.model_validate(
        {
            "schema": "ponder-plan/1",
            "name": "p",
            "steps": [
                {"id": f"s{i}", "kind": "agent", "prompt": "x", "checkpoint": f"l{i}"}
                for i in range(MAX_CHECKPOINTS + 2)
            ],
        }
    )
    errors = checkpoint_errors(many.steps, {})
    assert [(e.code, e.path) for e in errors] == [
        ("checkpoint.too_many", f"steps[{MAX_CHECKPOINTS}].checkpoint")
    ]
    assert errors[0].message == (
        f"a plan declares at most {MAX_CHECKPOINTS} checkpoint labels; fix: keep the ones a "
        "revert needs"
    )
    assert checkpoint_errors(many.steps[:MAX_CHECKPOINTS], {}) == []
