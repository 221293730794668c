"""Fixtures the plan tests share."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from activities.plan.cel import CelEvaluator


@pytest.fixture
async def evaluator() -> AsyncIterator[CelEvaluator]:
    cel = CelEvaluator()
    try:
        yield cel
    finally:
        await cel.close()
