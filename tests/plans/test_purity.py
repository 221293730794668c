"""The plan core is pure: importing any module of it loads no Temporal, httpx or activities code.

tests/test_layering.py imports each pure core in its own fresh interpreter (so what another test
imported cannot hide a transitive import) and checks exactly this; here every module of the plan
core must be on that list, so a new plan module is checked the same way. (This file used to start
a second interpreter per plan module for the same check: ~12 s of CPU a suite run.)
"""

from __future__ import annotations

from pathlib import Path

from tests.test_layering import FORBIDDEN_ROOTS, PURE, loaded_after_import

ROOT = Path(__file__).resolve().parents[2]
PLAN_MODULES = sorted(
    f"workflows.plan.{p.stem}"
    for p in (ROOT / "workflows" / "plan").glob("*.py")
    if p.stem != "__init__"
)


def test_the_list_of_pure_modules_is_complete() -> None:
    assert len(PLAN_MODULES) >= 12
    assert "workflows.plan.validate" in PLAN_MODULES and "workflows.plan.ledger" in PLAN_MODULES


def test_every_plan_module_is_a_pure_core_the_layering_test_imports_alone() -> None:
    assert set(FORBIDDEN_ROOTS) == {"temporalio", "httpx", "activities"}
    assert [module for module in PLAN_MODULES if module not in PURE] == []


def test_the_probe_would_see_an_impure_import() -> None:
    assert "temporalio" in loaded_after_import("workflows.model_calls")
