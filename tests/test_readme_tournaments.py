"""The Tournaments and Asking a model pages' recipes run as pasted, in order (their text).

Lines that name ``openai:``/``anthropic:`` models run against a local fake (real HTTP): the
home's ``ponder.toml`` points the built-in ``openai`` and ``anthropic`` endpoints at it and a
dummy key is set, as a user would point them at a proxy; that is the machine the recipes run
on, not a change to them. The OpenAI-compatible server the ask recipe names on Ollama's port
(127.0.0.1:11434) is the same kind of fake, listening there. One home and one embedded server
serve the whole file, as one shell would.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeProvider, Reply, Seen, anthropic_message, sim_responder
from tests.readme_shell import Shell, cancel_while_its_worker_waits, lines, readme_shell
from tests.test_readme import fenced, section

pytestmark = pytest.mark.slow  # started first: see tests/conftest.py

PAGE = "docs/tournaments.md"


def answer_both(seen: Seen) -> Reply:
    """OpenAI chat completions answered like the sim; Anthropic messages with a fixed text."""
    if seen.path.endswith("/messages"):
        return Reply(body=anthropic_message("Durable execution survives crashes."))
    return sim_responder(seen)


OLLAMA_PORT = 11434


@pytest.fixture(scope="module")
def provider() -> Iterator[FakeProvider]:
    server = FakeProvider(answer_both)
    yield server
    server.close()


@pytest.fixture(scope="module")
def ollama() -> Iterator[FakeProvider]:
    """The ask recipe's OpenAI-compatible server on 127.0.0.1:11434 (Ollama's port)."""
    server = FakeProvider(answer_both, port=OLLAMA_PORT)
    yield server
    server.close()


def point_builtins_at(home: Path, fake: FakeProvider) -> None:
    (home / "ponder.toml").write_text(
        f'[providers.openai]\nkind = "openai"\nbase_url = "{fake.url}/v1"\n'
        'api_key_env = "OPENAI_API_KEY"\nponder_headers = true\n\n'
        f'[providers.anthropic]\nkind = "anthropic"\nbase_url = "{fake.url}"\n'
        'api_key_env = "ANTHROPIC_API_KEY"\n'
    )


KEYS = {"OPENAI_API_KEY": "sk-readme-dummy", "ANTHROPIC_API_KEY": "sk-ant-readme-dummy"}


@pytest.fixture(scope="module")
async def sh(
    tmp_path_factory: pytest.TempPathFactory, provider: FakeProvider
) -> AsyncIterator[Shell]:
    async with readme_shell(tmp_path_factory.mktemp("readme-tournaments"), **KEYS) as shell:
        point_builtins_at(shell.home, provider)
        yield shell


def summary(sh: Shell, run: str) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((sh.home / "runs" / run / "summary.json").read_text())
    return loaded


@pytest.mark.timeout(700)
async def test_tournament_recipes_run_as_written(sh: Shell, provider: FakeProvider) -> None:
    (think,) = fenced(section("# Tournaments (`ponder think`)", page=PAGE), "sh")
    (first, paper, dry_run, tight, status, extend, watch, report, detach, cancel) = lines(think)
    provider.seen.clear()
    assert "[sim q=" in await sh.run(first)
    out = await sh.run(paper, timeout=200)
    assert "285 / 285" in out and "usd" in out
    assert {s.body["model"] for s in provider.seen} == {"gpt-4o-mini", "gpt-4o"}
    assert "calls: 15" in await sh.run(dry_run)
    # Judge retries use up the call limit: the run pauses, and says how to go on.
    paused = await sh.run(tight, expect=75)
    assert "ponder extend think-tight --calls +" in paused
    assert "continue with: ponder extend think-tight" in await sh.run(status)
    extended = await sh.run(extend)  # returns once accepted; a background worker goes on
    assert "budget now max_calls=110, max_usd=10.00" in extended
    assert "winner" in await sh.run(watch)
    assert summary(sh, "think-tight")["status"] == "completed"
    assert "report.html" in await sh.run(report)
    assert (await sh.run(detach)).strip() == "think-bg"
    await cancel_while_its_worker_waits(sh, "think-bg", cancel)
    assert summary(sh, "think-bg")["status"] == "cancelled"


@pytest.mark.timeout(300)
async def test_rank_and_mutate_recipes_run_as_written(sh: Shell) -> None:
    (block,) = fenced(section("## Ranking and mutating answers you already have", page=PAGE), "sh")
    for line in lines(block):
        out = await sh.run(line)
        assert "completed" in out or "[sim q=" in out, out
        assert "README" not in out  # only the shipped answers are ranked
    judge: dict[str, Any] = summary(sh, "rank-panel")["judge"]  # type: ignore[assignment]
    assert judge["orders"] == "both" and len(judge["by_judge"]) == 2
    assert judge["verdicts"] == 2 * 2 * judge["pairs"]  # two judges, both orders


@pytest.mark.timeout(300)
async def test_trust_recipes_run_as_written(sh: Shell) -> None:
    (block,) = fenced(section("## How far to trust a ranking", page=PAGE), "sh")
    both, panel, flagged = lines(block)
    assert "confidence: the winner's 95% interval" in await sh.run(both, timeout=200)
    judge: dict[str, Any] = summary(sh, "think-both")["judge"]  # type: ignore[assignment]
    assert judge["orders"] == "both" and judge["flip_rate"]["total"] == 12 + 12 + 16
    assert "[sim q=" in await sh.run(panel, timeout=200)
    panel_summary = summary(sh, "think-panel")
    judge = panel_summary["judge"]  # type: ignore[assignment]
    assert len(judge["by_judge"]) == 3
    assert panel_summary["confidence"]["resamples"] == 1000  # type: ignore[index]
    out = await sh.run(flagged)
    assert "warning: judge sim:default,family=claude is of the claude family" in out


@pytest.mark.timeout(300)
async def test_ask_recipes_run_as_written(
    sh: Shell, provider: FakeProvider, ollama: FakeProvider
) -> None:
    (block,) = fenced(section("# Asking a model", page="docs/models.md"), "sh")
    sim, openai, local, anthropic, detach, status, declare, declared = lines(block)
    provider.seen.clear()
    assert "[sim q=" in await sh.run(sim)
    assert "[sim q=" in await sh.run(openai)
    assert "[sim q=" in await sh.run(local)
    assert "Durable execution survives crashes." in await sh.run(anthropic)
    assert [s.body["model"] for s in provider.seen] == ["gpt-4o-mini", "claude-sonnet-4-5"]
    assert [s.body["model"] for s in ollama.seen] == ["llama3"]
    # The built-in endpoints, pointed here by ponder.toml, carry their configured keys.
    assert provider.seen[0].headers["authorization"] == "Bearer sk-readme-dummy"
    assert provider.seen[1].headers["x-api-key"] == "sk-ant-readme-dummy"
    assert (await sh.run(detach)).strip() == "ask-bg"
    answer = str((sh.home / "runs" / "ask-bg" / "artifacts" / "answer.txt").resolve())
    for _ in range(120):
        shown = await sh.run(status)
        if "completed" in shown:
            break
        await asyncio.sleep(0.5)
    assert summary(sh, "ask-bg")["status"] == "completed"
    assert answer in shown.split()  # the whole path, never cut with "…"
    # A provider declared after the detach: the new configuration has its own queue and its own
    # worker, so the old configuration's worker is never asked to make a call it cannot.
    await sh.run(declare)
    out = await sh.run(declared)
    assert "[sim q=" in out and "unknown provider" not in out
    assert [s.body["model"] for s in ollama.seen] == ["llama3", "llama3"]
