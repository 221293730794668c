"""The one atomic write (run store, payload store, saved profiles): whole or not at all, and a
failed write leaves no temporary file behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload

from activities.atomic import write_atomically
from activities.payload_store import FileSystemStorageDriver
from activities.run_store import RunStore
from client.profiles import ProfileStore, SavedProfile


def test_a_write_replaces_the_file_whole(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("old")
    assert write_atomically(target, b"new") == target
    assert target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]


def _failing_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    raise OSError(28, "No space left on device")


def test_every_writer_leaves_no_temporary_file_when_the_write_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = FileSystemStorageDriver(tmp_path / "payloads")
    store = RunStore(tmp_path / "runs")
    profiles = ProfileStore(tmp_path / "home")
    monkeypatch.setattr(os, "replace", _failing_replace)
    with pytest.raises(OSError):
        driver._store_one(Payload(data=b"x" * 100))
    with pytest.raises(OSError):
        store.write("run-1", "summary.json", "{}")
    with pytest.raises(OSError):
        profiles.save("mine", SavedProfile(n=4))
    left = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert left == [], left
