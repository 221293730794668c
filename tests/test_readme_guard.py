"""Every block of the documentation is run by a test: a new, untested recipe fails the suite.

``CLAIMS`` names, for each fenced block (its page, heading, language and place under that
heading), the test that runs it from that page's text. The guard fails when a page has a block
no test claims, when a claim names a block that is gone or a test that does not exist, and when
a recipe hides in an indented code block (which the helpers do not extract). It also keeps the
README a ten-minute read and every page free of references a reader cannot follow.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_readme import README, ROOT, pages

TESTS = Path(__file__).resolve().parent
GUARDED = [*pages(), ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md"]
README_MAX_LINES = 250

T = "docs/tournaments.md"
P = "docs/plans.md"
OPS = "docs/operating.md"
C = "docs/campaigns.md"

CLAIMS: dict[tuple[str, str, str, int], str] = {
    (OPS, "## Shared ledgers", "toml", 0): "test_ledger.py::test_the_documented_ledger_loads",
    (
        "docs/security.md",
        "## Encryption at rest",
        "sh",
        0,
    ): "test_encryption.py::test_the_keyring_recipe_makes_a_keyring_that_loads",
    (
        "docs/security.md",
        "## Encryption at rest",
        "toml",
        0,
    ): "test_encryption.py::test_the_encryption_configuration_loads",
    (
        P,
        "## Stratum flows",
        "sh",
        0,
    ): "test_readme_plans.py::test_the_stratum_flow_recipe_runs_as_written",
    ("README.md", "# ponder", "sh", 0): "test_readme_demo.py::test_make_demo_runs_as_written",
    ("README.md", "## A five-minute tour", "sh", 0): (
        "test_readme_tour.py::test_the_tour_runs_as_written"
    ),
    (T, "# Tournaments (`ponder think`)", "sh", 0): (
        "test_readme_tournaments.py::test_tournament_recipes_run_as_written"
    ),
    (T, "## Ranking and mutating answers you already have", "sh", 0): (
        "test_readme_tournaments.py::test_rank_and_mutate_recipes_run_as_written"
    ),
    (T, "## How far to trust a ranking", "sh", 0): (
        "test_readme_tournaments.py::test_trust_recipes_run_as_written"
    ),
    (T, "## Profiles, past runs and export", "sh", 0): (
        "test_readme_profiles.py::test_profile_runs_and_export_recipes_run_as_written"
    ),
    (T, "## Profiles, past runs and export", "sh", 1): (
        "test_readme_profiles.py::test_profile_runs_and_export_recipes_run_as_written"
    ),
    ("docs/models.md", "# Asking a model", "sh", 0): (
        "test_readme_tournaments.py::test_ask_recipes_run_as_written"
    ),
    ("docs/errors.md", "# Errors and codes", "sh", 0): (
        "test_readme_errors.py::test_every_readme_error_example_prints_one_line_with_its_code"
    ),
    ("docs/configuration.md", "# Configuration", "toml", 0): (
        "plans/test_workspace_roots.py::test_the_readme_configuration_loads"
    ),
    (OPS, "## Metrics", "yaml", 0): "test_metrics.py::test_the_scrape_job_reads_a_worker",
    (OPS, "## Workers on a cluster", "sh", 0): (
        "test_readme_worker.py::test_worker_command_runs_as_written"
    ),
    **{
        (OPS, "## Driving workflows with the `temporal` CLI", "sh", i): (
            "test_readme.py::test_temporal_cli_recipes_run_as_written"
        )
        for i in range(4)
    },
    (OPS, "## Python client", "python", 0): (
        "test_readme.py::test_python_client_snippet_runs_as_written"
    ),
    (P, "# Plans", "sh", 0): "test_readme_plans.py::test_plan_cli_recipes_run_as_written",
    (P, "## Control through the `temporal` CLI and Python", "sh", 0): (
        "test_readme_plans.py::test_plan_control_by_temporal_cli_and_python_runs_as_written"
    ),
    (P, "## Control through the `temporal` CLI and Python", "python", 0): (
        "test_readme_plans.py::test_plan_control_by_temporal_cli_and_python_runs_as_written"
    ),
    (P, "## Conditional steps and gates in sub-flows", "yaml", 0): (
        "plans/test_run_conditions.py::test_the_conditional_steps_recipe_runs_as_written"
    ),
    (P, "## Concurrent steps", "yaml", 0): (
        "plans/test_run_concurrency.py::test_the_concurrent_steps_recipe_runs_as_written"
    ),
    (P, "## Validation", "sh", 0): (
        "test_readme_plans.py::test_plan_validation_recipes_run_as_written"
    ),
    ("docs/mcp.md", "## Client configuration", "json", 0): (
        "mcp/test_readme_config.py::test_the_readme_configuration_serves_ponder"
    ),
    (C, "# Campaigns (`ponder campaign`)", "sh", 0): (
        "test_readme_campaigns.py::test_campaign_recipes_run_as_written"
    ),
    (C, "## Wire replay", "sh", 0): (
        "test_readme_campaigns.py::test_wire_replay_recipes_run_as_written"
    ),
}

DOCUMENTATION_ONLY = {
    ("CONTRIBUTING.md", "## Layout", "", 0): "a directory listing, not a command: nothing to run",
}


def blocks_of(page: Path) -> list[tuple[str, str, str, int]]:
    """(page, heading, language, index under that heading) of every fenced block, in order."""
    name = page.relative_to(ROOT).as_posix()
    heading, fence, blocks = "", None, []
    seen: dict[tuple[str, str], int] = {}
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            if fence is None:
                fence = line[3:].strip()
                index = seen.get((heading, fence), 0)
                seen[(heading, fence)] = index + 1
                blocks.append((name, heading, fence, index))
            else:
                fence = None
        elif fence is None and line.startswith("#"):
            heading = line.strip()
    assert fence is None, f"an unclosed fence in {name}"
    return blocks


def test_every_block_is_run_by_a_test() -> None:
    blocks = [block for page in GUARDED for block in blocks_of(page)]
    assert len(blocks) == len(set(blocks))
    unclaimed = [b for b in blocks if b not in CLAIMS and b not in DOCUMENTATION_ONLY]
    assert not unclaimed, f"blocks no test runs (add a test, then a claim): {unclaimed}"
    stale = sorted((set(CLAIMS) | set(DOCUMENTATION_ONLY)) - set(blocks))
    assert not stale, f"claims for blocks the pages no longer have: {stale}"


def test_every_claim_names_a_test_that_exists() -> None:
    for block, claim in CLAIMS.items():
        path, name = claim.split("::")
        source = (TESTS / path).read_text()
        assert re.search(rf"^(async )?def {name}\(", source, re.MULTILINE), (block, claim)
        # The test takes the block from the page's text, not a copy of it.
        assert "section(" in source and "fenced(" in source, claim
        page = block[0]
        if page != "README.md":
            assert f'"{page}"' in source or page in source, (claim, "reads its page by name")


def test_no_recipe_hides_in_an_indented_code_block() -> None:
    """Markdown's 4-space code blocks are not extracted by ``fenced``: write recipes fenced."""
    found = []
    for page in GUARDED:
        fence, previous = False, ""
        for number, line in enumerate(page.read_text().splitlines(), 1):
            if line.startswith("```"):
                fence = not fence
            elif not fence and line.startswith("    ") and line.strip() and not previous.strip():
                found.append((page.name, number, line))
            previous = line
    assert not found, f"indented code blocks (fence them and run them): {found}"


def test_the_readme_is_a_ten_minute_read() -> None:
    count = len(README.read_text().splitlines())
    assert count <= README_MAX_LINES, f"README.md has {count} lines: move detail to docs/"


# What a reader of the repository cannot follow: files that are not in it, and the history of
# how the text was written.
UNFOLLOWABLE = re.compile(
    r"(?<![/(\w])plans(-part\d)?\.md|shared/spec|\bissue #?\d+|\bround of work\b|\u00a7"
    r"|\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|this|that|last|next)"
    r" session\b",
    re.IGNORECASE,
)


def test_no_page_cites_what_is_not_in_the_repository() -> None:
    found = [
        (page.name, number, line.strip())
        for page in GUARDED
        for number, line in enumerate(page.read_text().splitlines(), 1)
        if UNFOLLOWABLE.search(line)
    ]
    assert not found, f"references a reader cannot follow: {found}"


# In code a parenthesis opens a citation (not a page's link), and "this session" or "the first
# session" is an MCP client's or the test run's: only a numbered one past the first ("Ninth
# session", "the seventh session's figures"; not "a second session") narrates how the code was
# written.
IN_CODE = re.compile(
    r"(?<![/\w])plans(-part\d)?\.md|shared/spec|\bissue #?\d+|\bround of work\b|\u00a7"
    r"|\bthe issue's\b"
    r"|(?<!\ba )\b(second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth) session\b",
    re.IGNORECASE,
)
SOURCE_DIRS = ("workflows", "activities", "client", "worker", "tests", "benchmarks", "examples")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yml", ".yaml", ".json", ".txt", ".cfg", ".ini"}


def repository_text() -> list[Path]:
    """Every text file a maintainer reads besides the pages: code, tests, benchmarks (and their
    log), examples and the build files; not this file, which spells out what it refuses."""
    files = [ROOT / name for name in ("pyproject.toml", "Makefile", "Dockerfile")]
    for folder in SOURCE_DIRS:
        files += [
            path
            for path in sorted((ROOT / folder).rglob("*"))
            if path.suffix in TEXT_SUFFIXES and "__pycache__" not in path.parts
        ]
    return [path for path in files if path.is_file() and path != Path(__file__).resolve()]


def test_no_code_or_log_cites_what_is_not_in_the_repository() -> None:
    """Comments and docstrings cite a ``docs/`` page (``docs/plans.md``), never the files the
    plan language was first written in, a section mark, an issue number or a round of work."""
    found = [
        (str(path.relative_to(ROOT)), number, line.strip()[:120])
        for path in repository_text()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if IN_CODE.search(line)
    ]
    assert not found, f"references a reader cannot follow: {found}"


def test_the_citation_checks_see_what_they_refuse() -> None:
    """Each form is caught; a docs page's own name, a page's link and an MCP session are not."""
    for cited in (
        '(plans.md "Run" 4)',
        "plans-part2.md section 9",
        "plans-part3.md",
        "\u00a74",
        "issue 16",
        "issue #13",
        "the ninth session's figures",
        "a round of work",
        "shared/spec/examples",
        "The issue's reproduction",
    ):
        assert IN_CODE.search(cited), cited
        assert cited.startswith("The issue") or UNFOLLOWABLE.search(cited.removeprefix("(")), cited
    fine_in_code = (
        'docs/plans.md, "Checkpoints"',
        "an MCP session",
        "that session's ponder home",
        "from the first session's handshake on",
        "a second session connects",
    )
    for fine in fine_in_code:
        assert not IN_CODE.search(fine), fine
    assert not UNFOLLOWABLE.search("see [Plans](plans.md#validation)")
    assert UNFOLLOWABLE.search("the next session") and not IN_CODE.search("the next session")
    assert Path(__file__).resolve() not in repository_text()
    assert ROOT / "workflows" / "errors.py" in repository_text()


def test_the_docs_site_lists_every_page() -> None:
    """mkdocs.yml's nav names every page under docs/ (a page left out is built but unreachable)."""
    nav = (ROOT / "mkdocs.yml").read_text()
    missing = [p.name for p in pages()[1:] if f": {p.name}" not in nav]
    assert not missing, f"pages missing from mkdocs.yml's nav: {missing}"
