"""Plan and campaign documents as the client reads them, before anything runs: the file read,
saved profiles expanded and (for campaigns) plan paths inlined, then validated as the workflow
will validate it. The CLI, the MCP tools and the Python client all come here; nothing here
prints (``client.validate_output`` prints a validation for both ``validate`` commands).
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workflows.plan.errors import PlanError

if TYPE_CHECKING:
    from activities.config import Settings
    from workflows.campaign.document import CampaignDocument
    from workflows.campaign.document import Validation as CampaignValidation
    from workflows.campaign.errors import CampaignError
    from workflows.plan.validate import Validation

# Imports sit in the functions below: ``ponder plan validate`` answers in well under a second
# only while a plan's path leaves the campaign document, its route check (and with them the
# Temporal SDK), the provider registry and the profile machinery unloaded.

__all__ = ["check_text", "load", "read_plan", "route_errors", "validate_campaign"]


def read_plan(file: str) -> tuple[str | None, PlanError | None]:
    """The text of FILE (``-``: stdin), or the ``document.unreadable`` error."""
    try:
        if file == "-":
            return sys.stdin.read(), None
        return Path(file).read_text(encoding="utf-8"), None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return None, PlanError(
            "document.unreadable", "", f"cannot read {file}: {reason}; fix: check the path"
        )


def check_text(
    text: str, filename: str | None, settings: Settings | Callable[[], Settings]
) -> tuple[Validation, Any]:
    """The plan in ``text`` validated, with each tournament step's saved ``profile`` expanded
    into explicit fields first (client side: workers need no profile files); and the document.
    ``settings`` may be a function that loads them: only a plan that names a tournament needs
    them (``ponder plan validate`` of any other plan loads no settings)."""
    from workflows.plan.document import parse_text
    from workflows.plan.validate import Validation, validate_document, validate_text

    raw, problems = parse_text(text, filename=filename)
    if problems:
        return validate_text(text, filename=filename), raw
    if not _names_tournament(raw):
        return validate_document(raw), raw  # no saved profile to expand
    from activities.providers import default_model_for
    from client.profiles import expand_saved_profiles

    loaded = settings() if callable(settings) else settings
    refused = expand_saved_profiles(raw, loaded.home, lambda p: default_model_for(p, loaded))
    if refused:
        errors = [PlanError("tournament.profile", path, exc.line()) for path, exc in refused]
        return Validation(None, None, errors), raw
    return validate_document(raw), raw


def _names_tournament(value: object) -> bool:
    """Whether any mapping in ``value`` is a tournament (``kind: tournament``): only those name
    a saved profile ``expand_saved_profiles`` would expand."""
    if isinstance(value, list):
        return any(_names_tournament(item) for item in value)
    if not isinstance(value, dict):
        return False
    return value.get("kind") == "tournament" or any(
        _names_tournament(item) for item in value.values()
    )


def load(file: str, settings: Settings | None = None) -> CampaignValidation:
    """The document in FILE (``-`` reads stdin), plan paths inlined, saved profiles expanded,
    validated as the workflow will validate it."""
    from workflows.campaign.document import Validation as CampaignValidation
    from workflows.campaign.errors import CampaignError
    from workflows.plan.document import parse_text

    try:
        text = sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return CampaignValidation(None, [_unreadable("", file, exc)])
    value, problems = parse_text(text, filename=None if file == "-" else file)
    if problems:
        return CampaignValidation(
            None, [CampaignError(p.code, p.path, p.message) for p in problems]
        )
    base = Path.cwd() if file == "-" else Path(file).resolve().parent
    return validate_campaign(value, settings, base=base)


def validate_campaign(
    value: object, settings: Settings | None = None, *, base: Path | None = None
) -> CampaignValidation:
    """A parsed document: plan paths inlined (relative to ``base``, default the working
    directory), saved profiles expanded, validated as the workflow will validate it."""
    from activities.config import load_settings
    from activities.providers import default_model_for
    from client.profiles import expand_saved_profiles
    from workflows.campaign.configs import config_errors
    from workflows.campaign.document import Validation as CampaignValidation
    from workflows.campaign.document import validate_value
    from workflows.campaign.errors import CampaignError

    value = copy.deepcopy(value)  # the caller's document is left as it was
    errors = _inline_plans(value, base or Path.cwd())
    settings = settings or load_settings()
    errors += [
        CampaignError("variant.config", path, exc.line())
        for path, exc in expand_saved_profiles(
            value, settings.home, lambda p: default_model_for(p, settings)
        )
    ]
    if errors:
        return CampaignValidation(None, errors)
    result = validate_value(value)
    if result.document is not None and not result.errors:
        result.errors += config_errors(result.document)
    return result


def route_errors(doc: CampaignDocument, settings: Settings) -> list[CampaignError]:
    """What the campaign's route assertion refuses, against this machine's endpoints: the
    check a worker with the same ponder.toml runs before the first cell (``route.<reason>``)."""
    from activities.campaign.cells import route_check
    from workflows.campaign.configs import variant_models
    from workflows.campaign.errors import CampaignError
    from workflows.campaign.types import RoutedModel

    check = route_check(
        doc.route,
        [RoutedModel(variant=v, model=m, base_url=u) for v, m, u in variant_models(doc)],
        settings,
        offline=doc.calls.replay is not None and doc.calls.replay.on_miss != "network",
    )
    return [
        CampaignError(f"route.{i.reason}", "route", f"{i.variant} ({i.model}): {i.message}")
        for i in check.issues
    ]


def _unreadable(path: str, file: str | Path, exc: Exception) -> CampaignError:
    from workflows.campaign.errors import CampaignError

    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return CampaignError("document.unreadable", path, f"cannot read {file}: {reason}")


def _inline_plans(value: object, base: Path) -> list[CampaignError]:
    """Replace each plan variant's ``plan: PATH`` by the parsed document (client side: the
    worker never reads a file a campaign names)."""
    from workflows.campaign.errors import CampaignError
    from workflows.plan.document import parse_text

    variants = value.get("variants") if isinstance(value, dict) else None
    errors: list[CampaignError] = []
    for i, variant in enumerate(variants if isinstance(variants, list) else []):
        config = variant.get("config") if isinstance(variant, dict) else None
        if variant.get("kind") != "plan" or not isinstance(config, dict):
            continue
        source = config.get("plan")
        if not isinstance(source, str):
            continue
        path = base / source
        where = f"variants[{i}].config.plan"
        try:
            plan_text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            errors.append(_unreadable(where, path, exc))
            continue
        plan, problems = parse_text(plan_text, filename=str(path))
        errors += [CampaignError(p.code, f"{where}.{p.path}", p.message) for p in problems]
        config["plan"] = plan
    return errors
