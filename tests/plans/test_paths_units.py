"""Direct unit tests of artifact path containment (workflows.plan.paths) over an injected,
in-memory file system: the exact messages and every step of the walk."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from workflows.plan.paths import escape_problem, lexical_problem


@pytest.mark.parametrize(
    ("rel", "why"),
    [
        ("", "an empty path"),
        (".", "an empty path"),
        ("././/", "an empty path"),
        ("a\x00b", "a path with a control character"),
        ("a\x1fb", "a path with a control character"),
        ("/abs", "an absolute path"),
        ("\\abs", "an absolute path"),
        ("c:x", "an absolute path"),
        ("Z:\\x", "an absolute path"),
        ("a/..", 'a path with a ".." segment'),
        ("..\\a", 'a path with a ".." segment'),
        ("a/b", None),
        ("1:x", None),
        ("a/...", None),
        ("a\x20b", None),
    ],
)
def test_lexical_problem(rel: str, why: str | None) -> None:
    assert lexical_problem(rel) == why


def check(rel: str, root: str, real: Mapping[str, str | None]) -> str | None:
    """``real``: each existing path -> where it really is (None: it cannot be resolved)."""
    return escape_problem(rel, root, exists=lambda p: p in real, realpath=lambda p: real.get(p, p))


OUT = "a path whose real location is outside the workspace (a symlinked component)"


def test_escape_problem_walks_every_existing_component() -> None:
    real: dict[str, str | None] = {"/ws": "/real/ws", "/ws/a": "/real/ws/a"}
    assert check("a/new/leaf", "/ws", real) is None
    assert check("a/new", "/ws/", real) is None
    assert check("../x", "/ws", real) == 'a path with a ".." segment'
    real["/ws/a/link"] = "/elsewhere"
    assert check("a/link/x", "/ws", real) == OUT
    assert check("./a//link", "/ws", real) == OUT
    assert check("a\\link", "/ws", real) == OUT
    real["/ws/a/link"] = "/real/ws-other/x"  # a sibling that shares the root's prefix
    assert check("a/link", "/ws", real) == OUT
    real["/ws/a/link"] = "/real/ws"  # the root itself is inside
    assert check("a/link", "/ws", real) is None
    real["/ws/a/link"] = None
    assert check("a/link/x", "/ws", real) == ("a path component that cannot be resolved")


def test_a_root_that_does_not_resolve_is_taken_as_written() -> None:
    real: dict[str, str | None] = {"/ws": None, "/ws/a": "/ws/a", "/ws/b": "/other"}
    assert check("a", "/ws", real) is None
    assert check("b", "/ws", real) == OUT


def test_the_file_system_root_as_the_workspace() -> None:
    real: dict[str, str | None] = {"/": "/", "/etc": "/etc"}
    assert check("etc/x", "/", real) is None
    real = {"/": "/", "/etc": "/etc", "/etc/x": "/etc/x"}
    assert check("etc/x", "", real) is None


def test_a_root_is_trimmed_of_slashes_only() -> None:
    real: dict[str, str | None] = {"/wsX": "/realX", "/wsX/a": "/realX/a", "/wsX/b": "/realY"}
    assert check("a/new", "/wsX/", real) is None
    assert check("b", "/wsX", real) == OUT
