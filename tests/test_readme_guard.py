"""Every block of the README is run by a test: a new, untested recipe fails the suite.

``CLAIMS`` names, for each fenced block (its heading, language and place under that heading),
the test that runs it from the README's text. The guard fails when the README has a block no
test claims, when a claim names a block that is gone or a test that does not exist, and when a
recipe hides in an indented code block (which the helpers do not extract).
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_readme import README

TESTS = Path(__file__).resolve().parent

CLAIMS: dict[tuple[str, str, int], str] = {
    ("# ponder", "sh", 0): "test_readme_demo.py::test_make_demo_runs_as_written",
    ("## Tournaments (`ponder think`)", "sh", 0): (
        "test_readme_tournaments.py::test_tournament_recipes_run_as_written"
    ),
    ("## Tournaments (`ponder think`)", "sh", 1): (
        "test_readme_tournaments.py::test_rank_and_mutate_recipes_run_as_written"
    ),
    ("## Tournaments (`ponder think`)", "sh", 2): (
        "test_readme_tournaments.py::test_trust_recipes_run_as_written"
    ),
    ("## Asking a model", "sh", 0): "test_readme_tournaments.py::test_ask_recipes_run_as_written",
    ("### Errors", "sh", 0): (
        "test_readme_errors.py::test_every_readme_error_example_prints_one_line_with_its_code"
    ),
    ("## Configuration", "toml", 0): (
        "plans/test_workspace_roots.py::test_the_readme_configuration_loads"
    ),
    ("## The embedded server and workers", "sh", 0): (
        "test_readme_worker.py::test_worker_command_runs_as_written"
    ),
    **{
        ("### Driving workflows with the `temporal` CLI", "sh", i): (
            "test_readme.py::test_temporal_cli_recipes_run_as_written"
        )
        for i in range(4)
    },
    (
        "### Python client",
        "python",
        0,
    ): "test_readme.py::test_python_client_snippet_runs_as_written",
    ("## Plans", "sh", 0): "test_readme_plans.py::test_plan_cli_recipes_run_as_written",
    ("## Plans", "sh", 1): (
        "test_readme_plans.py::test_plan_control_by_temporal_cli_and_python_runs_as_written"
    ),
    ("## Plans", "python", 0): (
        "test_readme_plans.py::test_plan_control_by_temporal_cli_and_python_runs_as_written"
    ),
    (
        "### Validation",
        "sh",
        0,
    ): "test_readme_plans.py::test_plan_validation_recipes_run_as_written",
    ("## Profiles, past runs, export and MCP", "sh", 0): (
        "test_readme_profiles.py::test_profile_runs_and_export_recipes_run_as_written"
    ),
    ("## Profiles, past runs, export and MCP", "sh", 1): (
        "test_readme_profiles.py::test_profile_runs_and_export_recipes_run_as_written"
    ),
    ("### MCP server", "json", 0): (
        "mcp/test_readme_config.py::test_the_readme_configuration_serves_ponder"
    ),
    ("## Campaigns (`ponder campaign`)", "sh", 0): (
        "test_readme_campaigns.py::test_campaign_recipes_run_as_written"
    ),
    (
        "### Wire replay",
        "sh",
        0,
    ): "test_readme_campaigns.py::test_wire_replay_recipes_run_as_written",
}

DOCUMENTATION_ONLY = {
    ("## Layout", "", 0): "a directory listing, not a command: nothing to run",
}


def readme_blocks() -> list[tuple[str, str, int]]:
    """(heading, language, index under that heading) of every fenced block, in order."""
    heading, fence, blocks = "", None, []
    seen: dict[tuple[str, str], int] = {}
    for line in README.read_text().splitlines():
        if line.startswith("```"):
            if fence is None:
                fence = line[3:].strip()
                index = seen.get((heading, fence), 0)
                seen[(heading, fence)] = index + 1
                blocks.append((heading, fence, index))
            else:
                fence = None
        elif fence is None and line.startswith("#"):
            heading = line.strip()
    assert fence is None, "an unclosed fence in README.md"
    return blocks


def test_every_readme_block_is_run_by_a_test() -> None:
    blocks = readme_blocks()
    assert len(blocks) == len(set(blocks))
    unclaimed = [b for b in blocks if b not in CLAIMS and b not in DOCUMENTATION_ONLY]
    assert not unclaimed, f"README blocks no test runs (add a test, then a claim): {unclaimed}"
    stale = sorted((set(CLAIMS) | set(DOCUMENTATION_ONLY)) - set(blocks))
    assert not stale, f"claims for blocks the README no longer has: {stale}"


def test_every_claim_names_a_test_that_exists() -> None:
    for block, claim in CLAIMS.items():
        path, name = claim.split("::")
        source = (TESTS / path).read_text()
        assert re.search(rf"^(async )?def {name}\(", source, re.MULTILINE), (block, claim)
        # The test takes the block from the README's text, not a copy of it.
        assert "section(" in source and "fenced(" in source, claim


def test_no_recipe_hides_in_an_indented_code_block() -> None:
    """Markdown's 4-space code blocks are not extracted by ``fenced``: write recipes fenced."""
    fence, previous, found = False, "", []
    for number, line in enumerate(README.read_text().splitlines(), 1):
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("    ") and line.strip() and not previous.strip():
            found.append((number, line))
        previous = line
    assert not found, f"indented code blocks in README.md (fence them and run them): {found}"
