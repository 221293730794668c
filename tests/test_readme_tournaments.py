"""The README's tournament, rank/mutate and ask recipes run as written (taken from its text).

Lines that name ``openai:``/``anthropic:`` models run against a local fake (real HTTP): the
test's ``ponder.toml`` points the built-in ``openai`` and ``anthropic`` endpoints at it and a
dummy key is set, as a user would point them at a proxy.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeProvider, Reply, Seen, anthropic_message, sim_responder
from tests.readme_shell import alternatives, lines, readme_shell, run_id
from tests.test_readme import fenced, section

TASK = "Prove that sqrt(2) is irrational.\n"


def answer_both(seen: Seen) -> Reply:
    """OpenAI chat completions answered like the sim; Anthropic messages with a fixed text."""
    if seen.path.endswith("/messages"):
        return Reply(body=anthropic_message("Durable execution survives crashes."))
    return sim_responder(seen)


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    server = FakeProvider(answer_both)
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


@pytest.mark.timeout(300)
async def test_tournament_recipes_run_as_written(tmp_path: Path, provider: FakeProvider) -> None:
    think, _, _ = fenced(section("## Tournaments (`ponder think`)"), "sh")
    (first, paper, dry_run, detach, verbs, extend) = lines(think)
    async with readme_shell(tmp_path, **KEYS) as sh:
        point_builtins_at(sh.home, provider)
        sh.write("task.md", TASK)
        assert "[sim q=" in await sh.run(first)
        out = await sh.run(paper, timeout=150)
        assert "285 / 285" in out and "usd" in out
        assert {s.body["model"] for s in provider.seen} == {"gpt-4o-mini", "gpt-4o"}
        assert "calls: 15" in await sh.run(dry_run)
        # The detached run (slow sim calls, so it is still running for extend).
        one = run_id(await sh.run(detach))
        status, watch, report, cancel = alternatives(verbs.replace("ID", one))
        # extend first, while the run surely still runs (4 rounds of 3 s calls); it follows
        # the run to its end.
        assert "max_calls=250, max_usd=10.00" in await sh.run(extend.replace("ID", one))
        assert one in await sh.run(status)
        assert "winner" in await sh.run(watch)
        assert "report.html" in await sh.run(report)
        # cancel needs a live run: the same detach line again, its id for ID.
        two = run_id(await sh.run(detach))
        await sh.run(cancel.replace(one, two), expect=1)
        summary = json.loads((sh.home / "runs" / two / "summary.json").read_text())
        assert summary["status"] == "cancelled"


@pytest.mark.timeout(300)
async def test_rank_and_mutate_recipes_run_as_written(tmp_path: Path) -> None:
    _, block, _ = fenced(section("## Tournaments (`ponder think`)"), "sh")
    async with readme_shell(tmp_path) as sh:
        # The files they name, written here.
        sh.write("task.md", "Print the length of the longest increasing subsequence.\n")
        for name in ("a.md", "b.md", "c.md", "draft.md"):
            sh.write(name, f"Answer {name}: read the numbers, patience-sort them.\n")
        for line in lines(block):
            out = await sh.run(line)
            assert "completed" in out or "[sim q=" in out, out


def latest_summary(home: Path, before: set[str]) -> dict[str, object]:
    (new,) = {p.name for p in (home / "runs").iterdir() if p.is_dir()} - before - {".claims"}
    return json.loads((home / "runs" / new / "summary.json").read_text())


def run_names(home: Path) -> set[str]:
    runs = home / "runs"
    return {p.name for p in runs.iterdir() if p.is_dir()} if runs.exists() else set()


@pytest.mark.timeout(300)
async def test_trust_recipes_run_as_written(tmp_path: Path) -> None:
    _, _, block = fenced(section("## Tournaments (`ponder think`)"), "sh")
    both, panel, flagged = lines(block)
    async with readme_shell(tmp_path) as sh:
        sh.write("task.md", TASK)
        before = run_names(sh.home)
        assert "completed" in await sh.run(both, timeout=150)
        judge: dict[str, Any] = latest_summary(sh.home, before)["judge"]  # type: ignore[assignment]
        assert judge["orders"] == "both" and judge["flip_rate"]["total"] == 12 + 12 + 16
        before = run_names(sh.home)
        assert "completed" in await sh.run(panel, timeout=150)
        summary = latest_summary(sh.home, before)
        judge = summary["judge"]  # type: ignore[assignment]
        assert len(judge["by_judge"]) == 3
        assert summary["confidence"]["resamples"] == 1000  # type: ignore[index]
        out = await sh.run(flagged)
        assert "warning: judge sim:default,family=claude is of the claude family" in out


@pytest.mark.timeout(300)
async def test_ask_recipes_run_as_written(tmp_path: Path, provider: FakeProvider) -> None:
    (block,) = fenced(section("## Asking a model"), "sh")
    sim, openai, local, anthropic, detach = lines(block)
    # The OpenAI-compatible server on 127.0.0.1:11434 is the fake here.
    local = local.replace("http://127.0.0.1:11434", provider.url)
    async with readme_shell(tmp_path, **KEYS) as sh:
        point_builtins_at(sh.home, provider)
        assert "[sim q=" in await sh.run(sim)
        assert "[sim q=" in await sh.run(openai)
        assert "[sim q=" in await sh.run(local)
        assert "Durable execution survives crashes." in await sh.run(anthropic)
        assert [s.body["model"] for s in provider.seen] == [
            "gpt-4o-mini",
            "llama3",
            "claude-sonnet-4-5",
        ]
        # The built-in endpoints, pointed here by ponder.toml, carry their configured keys.
        assert provider.seen[0].headers["authorization"] == "Bearer sk-readme-dummy"
        assert provider.seen[2].headers["x-api-key"] == "sk-ant-readme-dummy"
        detached = run_id(await sh.run(detach))
        summary = sh.home / "runs" / detached / "summary.json"
        for _ in range(300):
            if summary.exists() and json.loads(summary.read_text()).get("status") == "completed":
                break
            await asyncio.sleep(0.1)
        assert json.loads(summary.read_text())["status"] == "completed"
