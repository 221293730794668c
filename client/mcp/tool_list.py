"""The tool list ``tools/list`` answers: each tool's name, description and input schema, read
from ``client/mcp/tools.json`` so ``ponder mcp`` is ready before it imports what the tools run
with (their argument models, the SDK client, the run kinds: a second or more of start).

``python -m client.mcp.tool_list`` rewrites the file from ``client.mcp.tools.listed_tools()``; a
test fails while the file and the table differ.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["TOOL_LIST_FILE", "render", "tool_entries"]

TOOL_LIST_FILE = Path(__file__).with_name("tools.json")


def tool_entries() -> list[dict[str, Any]]:
    """``[{name, description, input_schema}]``: what ``tools/list`` shows, in its order."""
    tools: list[dict[str, Any]] = json.loads(TOOL_LIST_FILE.read_text(encoding="utf-8"))
    return tools


def render() -> str:
    """The file's text, from the tool table itself."""
    from client.mcp.tools import listed_tools

    listed = [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema()}
        for t in listed_tools()
    ]
    return json.dumps(listed, indent=1, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    TOOL_LIST_FILE.write_text(render(), encoding="utf-8")
