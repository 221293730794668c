"""The mutation check's scoring (tests/mutation_score.py) and its driver's choices of modules and
mutants (tests/mutation_run.py); mutmut itself runs in `make mutation`, not here."""

from __future__ import annotations

import io
import sys
import tomllib
from collections import Counter
from pathlib import Path

import pytest

from tests.mutation_plugin import (
    RECURSION_LIMIT,
    pytest_collection_modifyitems,
    pytest_configure,
)
from tests.mutation_run import ROOT, changed, module_name, prepare, pure_cores, sample
from tests.mutation_score import main, report, score, tally

RESULTS = """\
    workflows.budget.xǁBudgetǁblocking_limit__mutmut_1: killed
    workflows.budget.xǁBudgetǁblocking_limit__mutmut_2: timeout
    workflows.budget.x_helper__mutmut_1: survived
    workflows.budget.x_helper__mutmut_2: killed
    workflows.budget.x_helper__mutmut_3: killed
    workflows.plan.joins.x_join__mutmut_1: killed
    workflows.plan.joins.x_join__mutmut_2: no tests
    workflows.plan.joins.x_join__mutmut_3: not checked
    workflows.plan.joins.x_join__mutmut_4: caught by type check
    workflows.plan.__init__.x_f__mutmut_1: killed
not a result line
"""


def test_tally_counts_each_status_per_module() -> None:
    counts = tally(RESULTS.splitlines())
    assert counts["workflows.budget"] == {"killed": 3, "timeout": 1, "survived": 1}
    # a mutant the type checker refused never ran, but it was caught: a kill
    assert counts["workflows.plan.joins"] == {"killed": 2, "no tests": 1, "not checked": 1}
    assert counts["workflows.plan"] == {"killed": 1}  # workflows/plan/__init__.py


def test_a_timeout_is_its_own_column_and_not_a_kill() -> None:
    assert score(Counter(killed=3, timeout=1, survived=1)) == 60.0
    assert score(Counter(killed=4, survived=1)) == 80.0
    assert score(Counter(timeout=2)) == 0.0
    assert score(Counter()) == 100.0  # no mutants: nothing got past


def test_a_module_under_the_floor_fails(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(RESULTS))
    assert main(["--floor", "55"]) == 1  # joins: 2 of 4 killed, 50%
    out = capsys.readouterr()
    lines = out.out.splitlines()
    assert lines[0] == (
        "| module | mutants | killed | timeouts | survived | no tests | other | score |"
    )
    assert lines[1] == "| --- | --- | --- | --- | --- | --- | --- | --- |"
    assert lines[2:] == [
        "| `workflows.budget` | 5 | 3 | 1 | 1 | 0 | 0 | 60.0% |",
        "| `workflows.plan` | 1 | 1 | 0 | 0 | 0 | 0 | 100.0% |",
        "| `workflows.plan.joins` | 4 | 2 | 0 | 0 | 1 | 1 | 50.0% |",
        "| all | 10 | 6 | 1 | 1 | 1 | 1 | 60.0% |",
    ]
    assert out.err == "under 55%: workflows.plan.joins\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO(RESULTS))
    assert main(["--floor", "50"]) == 0
    assert capsys.readouterr().err == ""


def test_no_results_is_a_failure_not_a_pass(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("nothing here\n"))
    assert main([]) == 1
    assert "no mutmut results" in capsys.readouterr().err
    assert report({"m": Counter(killed=9, survived=1)}, floor=90.0) == 0


def test_the_pure_cores_are_the_contracts_modules_as_files(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "sub" / "deep").mkdir(parents=True)
    for name in ["__init__.py", "a.py", "sub/__init__.py", "sub/b.py", "sub/deep/c.py"]:
        (tmp_path / "pkg" / name).write_text("")
    (tmp_path / "pyproject.toml").write_text(
        """
[[tool.importlinter.contracts]]
name = "something else"
source_modules = ["pkg.nope"]

[[tool.importlinter.contracts]]
name = "pure cores import no Temporal, HTTP or activities, even transitively"
source_modules = ["pkg.a", "pkg", "pkg.sub.**"]
"""
    )
    assert pure_cores(tmp_path / "pyproject.toml") == [
        "pkg/__init__.py",
        "pkg/a.py",
        "pkg/sub/__init__.py",
        "pkg/sub/b.py",
        "pkg/sub/deep/c.py",
    ]


def test_the_real_pure_cores_exist_and_take_in_the_plan_package() -> None:
    cores = pure_cores()
    assert all((ROOT / f).is_file() for f in cores)
    for module in [
        "workflows/budget.py",
        "workflows/plan/validate.py",
        "workflows/plan/model.py",
        "workflows/tournament/bootstrap.py",
        "workflows/tournament/bradley_terry.py",
    ]:
        assert module in cores
    assert not [f for f in cores if f.startswith(("activities/", "workflows/plan_run/"))]


def test_the_mutation_tests_exist() -> None:
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    selection = settings["pytest_add_cli_args_test_selection"]
    assert selection and all((ROOT / t).is_file() for t in selection)
    assert "only_mutate" not in settings  # the driver sets it, from the contract


def test_a_commit_checks_the_pure_cores_it_touched() -> None:
    cores = ["workflows/a.py", "workflows/plan/b.py", "workflows/plan/c.py"]
    diff = ["README.md", "workflows/plan/c.py", "activities/x.py", "workflows/a.py"]
    assert changed(diff, cores) == ["workflows/a.py", "workflows/plan/c.py"]
    assert changed(["docs/index.md"], cores) == []


def test_module_names_are_mutmuts() -> None:
    assert module_name("workflows/plan/joins.py") == "workflows.plan.joins"
    assert module_name("workflows/plan/__init__.py") == "workflows.plan"


def test_a_sample_is_per_module_and_the_same_whatever_the_order() -> None:
    names = [f"workflows.a.x_f__mutmut_{i}" for i in range(1, 31)]
    names += [f"workflows.b.xǁCǁm__mutmut_{i}" for i in range(1, 6)]
    picked = sample(names, 10)
    assert picked == sample(list(reversed(names)), 10) == sorted(picked)
    assert sum(n.startswith("workflows.a.") for n in picked) == 10
    assert [n for n in picked if n.startswith("workflows.b.")] == sorted(names[30:])
    assert set(sample(names, 5)) < set(picked)  # a smaller sample is a part of a larger one
    assert picked != sorted(names[:10])  # not simply the first mutants of each function


def test_the_work_directory_mutates_only_the_chosen_modules(tmp_path: Path) -> None:
    prepare(tmp_path, ["workflows/budget.py", "workflows/plan/joins.py"])
    settings = tomllib.loads((tmp_path / "pyproject.toml").read_text())
    assert settings["tool"]["mutmut"]["only_mutate"] == [
        "workflows/budget.py",
        "workflows/plan/joins.py",
    ]
    # the rest is the checkout's: pytest's settings too, which the mutants' tests run under
    ours = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert settings["tool"]["pytest"] == ours["tool"]["pytest"]
    for name in ["workflows", "activities", "tests", "examples"]:
        assert (tmp_path / name).resolve() == ROOT / name
    prepare(tmp_path, ["workflows/budget.py"])  # again, in place: links kept, table rewritten
    settings = tomllib.loads((tmp_path / "pyproject.toml").read_text())
    assert settings["tool"]["mutmut"]["only_mutate"] == ["workflows/budget.py"]


def test_the_mutation_plugin_leaves_out_the_tests_that_need_a_dev_server() -> None:
    class Item:
        def __init__(self, *fixtures: str) -> None:
            self.fixturenames = list(fixtures)

    deselected: list[object] = []

    class Hook:
        def pytest_deselected(self, items: list[object]) -> None:
            deselected.extend(items)

    class Config:
        hook = Hook()

    unit, served, served_through_client = (
        Item("tmp_path"),
        Item("dev_server"),
        Item("client", "server_address", "dev_server"),
    )
    items = [unit, served, served_through_client]
    pytest_collection_modifyitems(Config(), items)  # type: ignore[arg-type]
    assert items == [unit] and deselected == [served, served_through_client]


def test_the_mutation_plugin_makes_room_for_the_trampolines_frames() -> None:
    before = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(1000)
        pytest_configure(None)  # type: ignore[arg-type]
        assert sys.getrecursionlimit() == RECURSION_LIMIT
        sys.setrecursionlimit(RECURSION_LIMIT * 2)
        pytest_configure(None)  # type: ignore[arg-type]
        assert sys.getrecursionlimit() == RECURSION_LIMIT * 2  # never lowered
    finally:
        sys.setrecursionlimit(before)
