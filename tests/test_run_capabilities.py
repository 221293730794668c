"""Read tokens without Temporal: which input names another run, the token a run's first write
makes, the constant-time check, and what the client reads on its user's behalf. (Through a real
worker and the ``temporal`` binary: ``tests/hostile/test_run_capabilities.py``.)"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from activities.run_store import ReadRefused, RunStore, check_read_token
from client.read_tokens import attach_read_tokens, read_token
from workflows.ask_types import AskInput
from workflows.call_options import CallOptions
from workflows.run_capabilities import (
    CAPABILITY_INVALID,
    CAPABILITY_REQUIRED,
    READ_TOKEN_FILE,
    missing_read_tokens,
    named_runs,
)

TOKEN = "ab" * 16


def test_every_field_that_names_a_source_run_is_found() -> None:
    doc = {
        "model": "replay:a",
        "plan": {"steps": [{"model": "replay:b"}, {"prompt": "replay: is a word"}]},
        "executors": {"claude": "replay:c"},
        "from_checkpoint": {"run_id": "d", "label": "x"},
        "calls": {"replay": {"run_id": "e"}},
        "other": "replay:../etc",  # not a run id: the worker's path rules refuse it
    }
    assert named_runs(doc) == {
        "a": "model",
        "b": "plan.steps[0].model",
        "c": "executors.claude",
        "d": "from_checkpoint.run_id",
        "e": "calls.replay.run_id",
    }
    # Wire replay is the worker's to decide (its recording may be a declared replay_dirs one).
    assert missing_read_tokens(doc, {"a": TOKEN, "b": "short"}) == {
        "b": "plan.steps[0].model",
        "c": "executors.claude",
        "d": "from_checkpoint.run_id",
    }


def test_read_tokens_are_well_formed_run_ids_and_tokens() -> None:
    assert CallOptions(read_tokens={"run-1": TOKEN}).read_tokens == {"run-1": TOKEN}
    for bad in ({"run-1": "AB" * 16}, {"run-1": TOKEN + "0"}, {"../x": TOKEN}):
        with pytest.raises(ValueError):
            CallOptions(read_tokens=bad)


def test_a_runs_first_claim_makes_its_read_token_once(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.claim("r1", "chain-1")
    path = tmp_path / "r1" / READ_TOKEN_FILE
    token = path.read_text().strip()
    assert len(token) == 32 and int(token, 16) >= 0
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    RunStore(tmp_path).claim("r1", "chain-1")  # a restarted worker: the token stays
    assert path.read_text().strip() == token
    store.claim("r2", "chain-2")
    assert (tmp_path / "r2" / READ_TOKEN_FILE).read_text().strip() != token
    assert [p.name for p in (tmp_path / "r1").iterdir()] == [READ_TOKEN_FILE]  # no temp left


def _refusal(root: Path, run_id: str, token: str | None) -> str:
    with pytest.raises(ReadRefused) as refused:
        check_read_token(root, run_id, token)
    assert "ab" * 4 not in refused.value.message
    return refused.value.code


def test_the_check_refuses_a_missing_wrong_or_linked_token(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.claim("src", "c")
    token = (tmp_path / "src" / READ_TOKEN_FILE).read_text().strip()
    check_read_token(tmp_path, "src", token)
    assert _refusal(tmp_path, "src", None) == CAPABILITY_REQUIRED
    assert _refusal(tmp_path, "src", TOKEN) == CAPABILITY_INVALID
    assert _refusal(tmp_path, "nobody", TOKEN) == CAPABILITY_INVALID  # no existence oracle
    (tmp_path / "old").mkdir()  # a run from before read tokens
    assert _refusal(tmp_path, "old", TOKEN) == CAPABILITY_INVALID
    # A token file that is a link to a file the attacker knows is no token.
    known = tmp_path / "known"
    known.write_text(TOKEN)
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / READ_TOKEN_FILE).symlink_to(known)
    assert _refusal(tmp_path, "linked", TOKEN) == CAPABILITY_INVALID
    (tmp_path / "dirlink").symlink_to(tmp_path / "src", target_is_directory=True)
    assert _refusal(tmp_path, "dirlink", token) == CAPABILITY_INVALID


def test_the_client_reads_tokens_for_its_user_and_input_wins(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.claim("src", "c")
    token = read_token(tmp_path, "src")
    assert token == (tmp_path / "src" / READ_TOKEN_FILE).read_text().strip()
    (tmp_path / "legacy").mkdir()
    made = read_token(tmp_path, "legacy")  # a run from before read tokens gets one
    assert made is not None and read_token(tmp_path, "legacy") == made
    assert read_token(tmp_path, "nobody") is None

    ask = attach_read_tokens(AskInput(question="q", model="replay:src"), tmp_path)
    assert ask.calls.read_tokens == {"src": token}
    path = f"replay:{tmp_path / 'legacy' / 'raw-events.jsonl'}"
    given = AskInput(question="q", model=path, calls=CallOptions(read_tokens={"legacy": TOKEN}))
    assert attach_read_tokens(given, tmp_path).calls.read_tokens == {"legacy": TOKEN}
    doc: dict[str, Any] = {
        "variants": [{"model": "replay:src"}],
        "calls": {"replay": {"run_id": "legacy"}},
    }
    assert attach_read_tokens(doc, tmp_path)["calls"]["read_tokens"] == {
        "legacy": made,
        "src": token,
    }
    plain = AskInput(question="q", model="sim:default")
    assert attach_read_tokens(plain, tmp_path) is plain
