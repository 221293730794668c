"""The mutation score table `make mutation` prints (tests/mutation_score.py)."""

from __future__ import annotations

import io
import sys

import pytest

from tests.mutation_score import main, tally

RESULTS = """\
    workflows.budget.xǁBudgetǁblocking_limit__mutmut_1: killed
    workflows.budget.xǁBudgetǁblocking_limit__mutmut_2: timeout
    workflows.budget.x_helper__mutmut_1: survived
    workflows.budget.x_helper__mutmut_2: killed
    workflows.plan.joins.x_join__mutmut_1: killed
    workflows.plan.joins.x_join__mutmut_2: no tests
"""


def test_tally_counts_each_status_per_module() -> None:
    counts = tally(RESULTS.splitlines())
    assert counts["workflows.budget"] == {"killed": 2, "timeout": 1, "survived": 1}
    assert counts["workflows.plan.joins"] == {"killed": 1, "no tests": 1}


def test_a_module_under_the_floor_fails(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(RESULTS))
    assert main(["--floor", "70"]) == 1  # joins: 1 of 2 caught, 50%
    out = capsys.readouterr()
    assert "| `workflows.budget` | 4 | 3 | 1 | 75.0% |" in out.out
    assert "| `workflows.plan.joins` | 2 | 1 | 1 | 50.0% |" in out.out
    assert "| all | 6 | | | 66.7% |" in out.out
    assert "under 70%: workflows.plan.joins" in out.err
    monkeypatch.setattr(sys, "stdin", io.StringIO(RESULTS))
    assert main(["--floor", "50"]) == 0
