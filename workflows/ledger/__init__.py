"""Shared spend ledgers: one budget many runs and workers draw on (docs/operating.md)."""

__all__: list[str] = []
