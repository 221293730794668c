"""``workflows/control_verbs.py``: one builder for a control verb's update, validator and signal,
declared by the Tournament and the Campaign under the message names their histories hold (the
runs themselves are driven in ``tests/tournament/test_budget_control.py`` and
``tests/campaigns/test_control*.py``)."""

from __future__ import annotations

import pytest
from temporalio import workflow
from temporalio.common import RawValue

from worker.arity import arity_problem
from workflows.campaign.workflow import CampaignWorkflow
from workflows.names import SIGNAL_EXTEND_BUDGET, UPDATE_EXTEND_BUDGET
from workflows.raw_input import NO_INPUT
from workflows.tournament.workflow import TournamentWorkflow


@pytest.mark.parametrize("cls", [TournamentWorkflow, CampaignWorkflow])
def test_each_workflow_declares_the_extend_budget_pair_under_its_recorded_names(
    cls: type,
) -> None:
    defn = workflow._Definition.must_from_class(cls)
    update = defn.updates[UPDATE_EXTEND_BUDGET]
    signal = defn.signals[SIGNAL_EXTEND_BUDGET]
    assert update.validator is not None
    # One raw argument, decoded by the handler itself: no input and bad input are its own
    # coded refusals, and the SDK hands it the payload undecoded.
    assert update.arg_types == [RawValue] and signal.arg_types == [RawValue]
    for handler in (update.fn, update.validator, signal.fn):
        assert arity_problem(handler, [object(), NO_INPUT]) is None  # self and one input
        assert arity_problem(handler, [object()]) is None  # self, no input: the default
        assert arity_problem(handler, [object(), NO_INPUT, NO_INPUT]) is not None
    # The handlers are the workflow's own attributes, named as before they were built once.
    assert cls.extend_budget._defn is update  # type: ignore[attr-defined]
    assert cls.extend_budget_signal is signal.fn  # type: ignore[attr-defined]
