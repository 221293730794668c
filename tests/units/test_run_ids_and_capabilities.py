"""Direct tests of the run id rule, who may write which run directory, and the refusal of input
that reads another run without its read token."""

from __future__ import annotations

import pytest

from workflows.run_capabilities import missing_read_tokens, named_runs, required_message
from workflows.run_ids import (
    RunIdInvalid,
    check_run_id,
    foreign_run_id_problem,
    run_id_problem,
    writer_problem,
)


@pytest.mark.parametrize("run_id", ["a", "A.b_c-9", "0" + "x" * 127])
def test_a_run_id_of_the_rule_is_taken(run_id: str) -> None:
    assert run_id_problem(run_id) is None
    assert check_run_id(run_id) == run_id


@pytest.mark.parametrize("run_id", ["", ".a", "-a", "a/b", "a b", "0" + "x" * 128, "a\n"])
def test_a_run_id_against_the_rule_is_refused_whole(run_id: str) -> None:
    message = (
        f"run id {run_id!r} must match [A-Za-z0-9][A-Za-z0-9._-]* and be at most 128 "
        "characters (no slashes, no leading dot): choose another"
    )
    assert run_id_problem(run_id) == message
    with pytest.raises(RunIdInvalid) as caught:
        check_run_id(run_id)
    assert (caught.value.code, caught.value.message) == ("run.id_invalid", message)


def test_input_may_name_only_its_own_workflow_s_run() -> None:
    assert foreign_run_id_problem("wf", None) is None
    assert foreign_run_id_problem("wf", "wf") is None
    assert foreign_run_id_problem("wf", "other") == (
        "run_id: 'other' is not this run's workflow id 'wf': a run writes only its own "
        "directory, named by its workflow id; leave run_id out, or start the workflow with id "
        "'other'"
    )


def test_a_workflow_writes_its_own_directory_and_its_children_s_only() -> None:
    assert writer_problem("wf", "wf") is None
    assert writer_problem("wf", "wf.cell1") is None
    assert writer_problem(None, "wf") == (
        "run 'wf': an activity outside a workflow writes no run directory"
    )
    assert writer_problem("wf", "wfx") == (
        "workflow 'wf' may not write run 'wfx''s directory: a workflow writes only its own run "
        "directory ('wf') and its children's ('wf' + '.<suffix>')"
    )
    assert writer_problem("wf", "other.wf") is not None


def test_a_replay_string_at_the_top_names_the_input_itself() -> None:
    assert named_runs("replay:abc") == {"abc": "input"}
    assert named_runs(["x", "replay:a"]) == {"a": "[1]"}
    assert named_runs({"a": {"replay": {"run_id": "../x"}}}) == {}
    # the first field that names a run is the one reported
    assert named_runs({"m": "replay:a", "n": "replay:a"}) == {"a": "m"}


def test_a_token_of_the_wrong_form_is_as_good_as_none() -> None:
    token = "0" * 32
    doc = {"model": "replay:a"}
    assert missing_read_tokens(doc, {"a": token}) == {}
    assert missing_read_tokens(doc, {"a": token.upper() + "0"}) == {"a": "model"}
    assert missing_read_tokens(doc, {}) == {"a": "model"}


def test_the_refusal_names_up_to_five_fields_and_the_fix() -> None:
    missing = {f"r{i}": f"steps[{i}].model" for i in range(7)}
    shown = ", ".join(f"steps[{i}].model names run 'r{i}'" for i in range(5))
    assert required_message(missing) == (
        f"{shown}: reading another run needs its read token in calls.read_tokens "
        '({"RUN_ID": "<32 hex>"}); fix: start the run with ponder (the CLI, the MCP server or '
        "the Python client read it for you from the source run's directory), or copy it from "
        "<runs_dir>/RUN_ID/read-token if you can read that directory"
    )
