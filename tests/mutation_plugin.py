"""A pytest plugin for mutation runs (``-p tests.mutation_plugin``, [tool.mutmut] in
pyproject.toml). It leaves out the tests that need the dev server, so a file that mixes unit
tests with end-to-end ones lends its unit tests to the mutation check; and it raises the
recursion limit, since mutmut's trampolines add two frames to every call of a mutated function
(a parser's 64 levels of nesting, refused by the parser itself, overflowed Python's 1,000)."""

from __future__ import annotations

import sys

import pytest

RECURSION_LIMIT = 5_000


def pytest_configure(config: pytest.Config) -> None:
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    served = [item for item in items if "dev_server" in getattr(item, "fixturenames", ())]
    if served:
        config.hook.pytest_deselected(items=served)
        items[:] = [item for item in items if item not in served]
