"""Ponder's own stores are carved out of every workspace root, whatever the roots say.

A workspace that lies in ponder's home or a store, or holds one, is refused; so is a workspace
path that resolves into one (a symlink, or ``ponder.toml`` kept in a project directory). The
calling run's own worktrees are the one place inside the runs store a workspace may be. These
are the activities' checks called directly; ``tests/hostile/test_run_files.py`` drives the same
through the real ``temporal`` binary and a worker process.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError

from activities.config import Settings, load_settings
from activities.plan.probes import FileProbeActivities
from activities.plan.roots import (
    COMMAND_DIRS_KEPT,
    WORKSPACE_REFUSED,
    command_dirs_file,
    outside_roots,
    ponder_stores,
    with_run_worktrees,
    worker_roots,
)
from activities.plan.workspace import WorkspaceActivities
from workflows.plan.check_types import FileProbe, ProbeFilesInput
from workflows.plan.run_types import PathsInput


@pytest.fixture
def home(tmp_path: Path) -> Settings:
    """A worker whose ponder home sits inside the directory it declares as a root."""
    settings = load_settings(home=str(tmp_path / "home"))
    victim = settings.runs_dir / "victim"
    victim.mkdir(parents=True)
    (victim / "outputs.json").write_text('{"answer": "the secret plan"}')
    (tmp_path / "ws").mkdir()
    return settings


def _refused(workspace: Path | str, roots: list[str]) -> str:
    problem = outside_roots(str(workspace), roots)
    assert problem is not None, f"{workspace} was allowed"
    return problem


def test_a_root_that_contains_the_home_stays_a_root_for_everything_else(
    home: Settings, tmp_path: Path
) -> None:
    roots = worker_roots([tmp_path], settings=home)
    assert outside_roots(str(tmp_path / "ws"), roots) is None
    problem = _refused(home.runs_dir / "victim", roots)
    assert "overlaps ponder's store" in problem and "never part of a workspace" in problem
    assert "fix: give a workspace that neither lies in nor holds" in problem
    _refused(home.home, roots)
    _refused(tmp_path, roots)  # it holds the home


def test_a_root_that_is_the_home_or_a_store_declares_nothing(
    home: Settings, tmp_path: Path
) -> None:
    for declared in (home.home, home.runs_dir, home.runs_dir / "victim"):
        roots = worker_roots([declared], settings=home)
        _refused(declared, roots)
        _refused(home.runs_dir / "victim", roots)


def test_a_symlink_into_a_store_is_judged_where_it_leads(home: Settings, tmp_path: Path) -> None:
    roots = worker_roots([tmp_path], settings=home)
    (tmp_path / "ws" / "runs").symlink_to(home.runs_dir)
    problem = _refused(tmp_path / "ws" / "runs" / "victim", roots)
    assert f"(really '{home.runs_dir.resolve() / 'victim'}')" in problem
    outcome = (
        FileProbeActivities(roots)
        ._probe_files(
            ProbeFilesInput(
                workspace=str(tmp_path / "ws"),
                probes=[FileProbe(path="runs/victim/outputs.json", text="secret")],
            )
        )
        .outcomes[0]
    )
    assert outcome.escapes and not outcome.holds


def test_stores_outside_the_home_are_carved_out_too(tmp_path: Path) -> None:
    elsewhere = tmp_path / "shared"
    settings = load_settings(home=str(tmp_path / "home")).model_copy(
        update={
            "runs_dir": elsewhere / "runs",
            "payload_dir": elsewhere / "payloads",
            "training_dir": elsewhere / "pairs",
            "replay_dirs": [elsewhere / "recordings"],
        }
    )
    stores, _ = ponder_stores(settings)
    roots = worker_roots([tmp_path], settings=settings)
    for store in ("runs", "payloads", "pairs", "recordings"):
        assert str((elsewhere / store).resolve()) in stores
        _refused(elsewhere / store / "x", roots)
    _refused(elsewhere, roots)
    assert outside_roots(str(tmp_path), worker_roots([tmp_path], settings=None)) is None


def test_the_probe_refuses_the_store_and_answers_the_same_either_way(
    home: Settings, tmp_path: Path
) -> None:
    """No ``file_contains`` bit about a store: right and wrong guesses are refused alike,
    before anything is read."""
    roots = worker_roots([tmp_path], settings=home)
    probes = FileProbeActivities(roots)
    messages = []
    for guess in ("the secret plan", "something else"):
        with pytest.raises(ApplicationError) as info:
            probes._probe_files(
                ProbeFilesInput(
                    workspace=str(home.runs_dir / "victim"),
                    probes=[FileProbe(path="outputs.json", text=guess)],
                )
            )
        assert info.value.type == WORKSPACE_REFUSED and info.value.non_retryable
        messages.append(info.value.message)
    assert messages[0] == messages[1] and "secret" not in messages[0]


def test_configuration_and_secrets_files_in_a_project_are_not_workspace_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "keys.env").write_text("LOCAL_KEY=sk-local-123\n")
    monkeypatch.setenv("PONDER_SECRETS_FILE", str(project / "keys.env"))
    config = project / "ponder.toml"
    config.write_text('[providers.local]\nkind = "openai"\nbase_url = "http://x"\n')
    (project / "alias.toml").symlink_to(config)
    (project / "notes.md").write_text("notes")
    settings = load_settings(config, home=str(tmp_path / "home"))
    roots = worker_roots([tmp_path], settings=settings)
    assert outside_roots(str(project), roots) is None  # the project itself is a workspace
    probes = FileProbeActivities(roots)
    result = probes._probe_files(
        ProbeFilesInput(
            workspace=str(project),
            probes=[
                FileProbe(path="ponder.toml", text="openai"),
                FileProbe(path="alias.toml"),
                FileProbe(path="notes.md", text="notes"),
                FileProbe(path="keys.env", text="sk-"),
            ],
        )
    )
    toml, alias, notes, keys = result.outcomes
    assert toml.escapes and alias.escapes and "configuration or secrets file" in toml.reason
    assert keys.escapes and not keys.holds
    assert notes.holds and not notes.escapes
    checked = WorkspaceActivities(roots)._check_paths(
        PathsInput(workspace=str(project), paths=["ponder.toml", "notes.md"])
    )
    assert len(checked) == 1 and checked[0].startswith("'ponder.toml': is ponder's configuration")


def test_only_the_calling_runs_own_worktrees_are_granted_inside_the_runs_store(
    home: Settings, tmp_path: Path
) -> None:
    roots = worker_roots([tmp_path], settings=home)
    own = with_run_worktrees(roots, home.runs_dir, "mine")
    item = home.runs_dir / "mine" / "worktrees" / "fan-0"
    assert outside_roots(str(item), own) is None
    _refused(home.runs_dir / "mine", own)  # the run directory itself is still a store
    _refused(home.runs_dir / "theirs" / "worktrees" / "fan-0", own)
    _refused(item, roots)  # another workflow is not granted this run's worktrees


def test_embedded_workers_of_one_home_serve_each_others_start_directories(
    home: Settings, tmp_path: Path
) -> None:
    """A background worker left by a command in one project and a command's own worker in
    another share the queue: each holds a workspace to both start directories, read at each
    check, and never to the home or a store."""
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    first = worker_roots([], settings=home, embedded=True, cwd=str(one))
    assert first == [str(one)] and _refused(two, first).count("outside every workspace root")
    second = worker_roots([], settings=home, embedded=True, cwd=str(two))
    for roots in (first, second):  # the first worker learns of the second's directory
        assert outside_roots(str(one), roots) is None
        assert outside_roots(str(two), roots) is None
        _refused(home.runs_dir / "victim", roots)
    assert first.current() == [str(one), str(two)]
    # A cluster worker, and a worker that declares roots, neither note nor read the file.
    cluster = worker_roots([], settings=home, cwd=str(tmp_path / "ws"))
    _refused(one, cluster)
    declared = worker_roots([tmp_path / "ws"], settings=home, embedded=True)
    _refused(one, declared)
    assert command_dirs_file(home).read_text().splitlines() == [str(one), str(two)]


def test_the_noted_start_directories_are_bounded_and_never_the_home(
    home: Settings, tmp_path: Path
) -> None:
    for n in range(COMMAND_DIRS_KEPT + 5):
        worker_roots([], settings=home, embedded=True, cwd=str(tmp_path / f"d{n}"))
    noted = command_dirs_file(home).read_text().splitlines()
    assert len(noted) == COMMAND_DIRS_KEPT and noted[-1] == str(
        tmp_path / f"d{COMMAND_DIRS_KEPT + 4}"
    )
    # A hand-edited or stale entry naming the home or / is no root.
    command_dirs_file(home).write_text(f"{Path.home()}\n/\nrelative\n")
    roots = worker_roots([], settings=home, embedded=True, cwd=str(tmp_path / "d0"))
    assert roots.current() == [str(tmp_path / "d0")]
