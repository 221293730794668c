"""One run as a portable bundle, the core ``ponder export`` and the MCP ``export`` tool share.

A bundle is what the run directory holds for people and tools (summary, redacted config,
candidates, comparisons, scores, usage, events, final texts), never the raw HTTP captures or
stored prompts. Everything goes through the run store's redaction once more, with the keys this
machine knows, so a bundle can be mailed without a second look.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from activities.errors import ConfigError
from activities.raw_events import redact
from activities.run_file_crypto import read_run_text
from workflows import phases
from workflows.run_ids import RUN_NOT_FOUND

if TYPE_CHECKING:
    from activities.config import Settings

__all__ = ["BUNDLE_FORMAT", "MAX_FILE_BYTES", "Format", "bundle", "render"]

Format = Literal["json", "jsonl", "markdown"]
BUNDLE_FORMAT = "ponder-run-bundle/1"
_JSON_FILES = ("summary.json", "config.json", "cost.json", "campaign.json")
_JSONL_FILES = {
    "candidates.jsonl": "candidate",
    "comparisons.jsonl": "comparison",
    "scores.jsonl": "score",
    "usage.jsonl": "usage",
    "events.jsonl": "event",
    "trace.jsonl": "trace",
    "records.jsonl": "record",
}
_TEXTS = ("artifacts/final.txt", "artifacts/winner.txt", "artifacts/answer.txt")
MAX_FILE_BYTES = 64 * 1024 * 1024


def _inside(run_dir: Path, relative: str) -> Path | None:
    """``run_dir/relative`` if it is a regular file inside the run directory (no symlinks)."""
    path = run_dir / relative
    if path.is_symlink() or not path.is_file():
        return None
    if not path.resolve().is_relative_to(run_dir.resolve()):
        return None
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ConfigError(
            "export.too_large", f"{path} is over {MAX_FILE_BYTES} bytes: too large to bundle"
        )
    return path


def bundle(settings: Settings, run_id: str) -> dict[str, Any]:
    """The run's bundle; refuses a path-shaped id (``run.id_invalid``) and an unknown run."""
    from client.run_list import checked_run_dir, store_row  # not for `ponder export --help`

    run_dir = checked_run_dir(settings.runs_dir, run_id)
    row = store_row(settings.runs_dir, run_id)
    if row is None:
        raise ConfigError(
            RUN_NOT_FOUND,
            f"no artifacts for run {run_id!r} under {settings.runs_dir}: "
            "check the id with ponder runs",
        )
    out: dict[str, Any] = {"format": BUNDLE_FORMAT, "run": row.model_dump(mode="json")}
    for name in _JSON_FILES:
        path = _inside(run_dir, name)
        if path is not None:
            out[name.removesuffix(".json")] = json.loads(read_run_text(path))
    for name in _JSONL_FILES:
        path = _inside(run_dir, name)
        if path is not None:
            lines = read_run_text(path).splitlines()
            out[name.removesuffix(".jsonl")] = [json.loads(x) for x in lines if x.strip()]
    texts = {}
    for name in _TEXTS:
        path = _inside(run_dir, name)
        if path is not None:
            texts[Path(name).stem] = read_run_text(path)
    out["texts"] = texts
    from activities.config import known_secrets  # not for `ponder export --help`

    redacted: dict[str, Any] = redact(out, known_secrets(settings))
    return redacted


def _jsonl(data: dict[str, Any]) -> str:
    lines = [{"type": "run", "format": data["format"], **data["run"]}]
    for key in ("summary", "config"):
        if key in data:
            lines.append({"type": key, "data": data[key]})
    for file, kind in _JSONL_FILES.items():
        for record in data.get(file.removesuffix(".jsonl"), []):
            lines.append({"type": kind, **record})
    for name, text in data["texts"].items():
        lines.append({"type": "text", "name": name, "text": text})
    return "".join(json.dumps(line, sort_keys=True) + "\n" for line in lines)


def _fence(text: str) -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}\n{text.rstrip()}\n{fence}\n"


def _markdown(data: dict[str, Any]) -> str:
    run = data["run"]
    out = [f"# ponder run {run['run_id']}\n"]
    out.append("| field | value |\n| --- | --- |")
    for key in ("kind", "status", "created", "calls", "usd", "outcome", "simulated"):
        value = run.get(key)
        out.append(f"| {key} | {'-' if value is None else value} |")
    summary = data.get("summary") or {}
    if summary.get("recommendation"):  # a campaign
        out.append(f"\n## Decision\n\n{summary['recommendation']}\n")
        out.append("| variant | decision |\n| --- | --- |")
        for variant, decision in (summary.get("decisions") or {}).items():
            out.append(f"| {variant} | {decision} |")
    config = data.get("config") or {}
    if config.get("task"):
        out.append("\n## Task\n")
        out.append(_fence(str(config["task"])))
    scores = [s for s in data.get("scores", []) if s.get("phase") == phases.FINAL_JUDGING]
    if scores:
        out.append("## Leaderboard\n")
        out.append("| rank | candidate | score | W/L/T |\n| --- | --- | --- | --- |")
        for s in sorted(scores, key=lambda s: s["rank"]):
            wlt = f"{s['wins']}/{s['losses']}/{s['ties']}"
            out.append(f"| {s['rank']} | {s['candidate_id']} | {s['score']:+.3f} | {wlt} |")
    for name, title in (("final", "Final answer"), ("answer", "Answer"), ("winner", "Winner")):
        text = data["texts"].get(name)
        if text is not None and not (name == "winner" and "final" in data["texts"]):
            out.append(f"\n## {title}\n")
            out.append(_fence(text))
    comparisons = data.get("comparisons", [])
    if comparisons:
        out.append(f"\n## Comparisons ({len(comparisons)})\n")
        out.append("| phase | A | B | winner |\n| --- | --- | --- | --- |")
        for c in comparisons:
            a, b = c["presented_a"], c["presented_b"]
            out.append(f"| {c['phase']} | {a} | {b} | {c['winner']} |")
    return "\n".join(out) + "\n"


def render(data: dict[str, Any], fmt: Format) -> str:
    if fmt == "json":
        return json.dumps(data, indent=2, sort_keys=True) + "\n"
    if fmt == "jsonl":
        return _jsonl(data)
    return _markdown(data)
