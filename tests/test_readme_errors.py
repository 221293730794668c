"""The Errors page's examples, run as written: each prints one line with the code it documents.

Each line of the Errors block ends in ``# exit N  CODE``; the command must exit N and print
exactly one line, ``ponder: CODE: ...``, with no traceback.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.readme_shell import lines, readme_shell
from tests.test_readme import fenced, section

DOCUMENTED = re.compile(r"^(?P<command>.*?)\s+# exit (?P<exit>\d+)\s+(?P<code>\S+)\s*$")
LINE = re.compile(r"^ponder: (?P<code>[a-z][a-z0-9_]*(?:[.-][a-z0-9_]+)+): \S")


def examples() -> list[tuple[str, int, str]]:
    (block,) = fenced(section("# Errors and codes", page="docs/errors.md"), "sh")
    found = []
    for line in lines(block):
        documented = DOCUMENTED.match(line)
        assert documented, f"an error example without '# exit N  CODE': {line}"
        found.append((documented["command"], int(documented["exit"]), documented["code"]))
    return found


def test_the_examples_cover_the_issue_s_error_paths() -> None:
    codes = {code for _, _, code in examples()}
    # Missing run, unknown provider, missing key, unreadable @file, a click usage error.
    assert {
        "run.not_found",
        "model.provider_unknown",
        "model.key_missing",
        "file.unreadable",
        "usage.invalid",
    } <= codes


@pytest.mark.slow  # a shell running every example: started first (tests/conftest.py)
@pytest.mark.timeout(300)
async def test_every_readme_error_example_prints_one_line_with_its_code(tmp_path: Path) -> None:
    async with readme_shell(tmp_path) as sh:
        sh.env.pop("OPENAI_API_KEY", None)
        for command, exit_code, code in examples():
            out = await sh.run(command, expect=exit_code)
            printed = [line for line in out.splitlines() if line.strip()]
            assert len(printed) == 1, (command, out)
            shown = LINE.match(printed[0])
            assert shown and shown["code"] == code, (command, printed[0])
            assert "Traceback" not in out
