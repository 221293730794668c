"""``ponder mcp``: ponder's tools and run resources for MCP clients (see ``client.mcp.server``)."""

from __future__ import annotations

__all__: list[str] = []
