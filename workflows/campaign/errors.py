"""Campaign validation errors: a stable code, a path into the document and a message.

Pure (no imports beyond the standard library). Validation collects every error instead of
stopping at the first, so one ``ponder campaign validate`` shows everything to fix. Codes are
public surface: add codes, never rename them.
"""

from __future__ import annotations

from dataclasses import dataclass

from workflows.coded_errors import CodedError, DocumentInvalid

__all__ = ["CODES", "CampaignError", "CampaignInvalid"]

CODES: dict[str, str] = {
    "document.unreadable": "the file cannot be read",
    "document.syntax": "the text is not valid JSON or YAML",
    "document.duplicate_key": "a mapping repeats a key",
    "document.not_object": "the document must be a mapping",
    "document.too_large": "the document is over the size limit",
    "value.not_finite": "NaN and infinities are not allowed",
    "value.not_json": "only JSON values are allowed",
    "schema.unknown": "`schema` must be ponder-campaign/1",
    "field.unknown": "a key the format does not define",
    "field.missing": "a required field is absent",
    "field.type": "a value has the wrong type",
    "field.range": "a number or length is out of range",
    "field.pattern": "a string does not match its pattern",
    "field.choice": "a value is not one of the allowed values",
    "field.invalid": "a value is invalid",
    "field.not_allowed": "a field the campaign sets itself (task, seed, run_id, budget)",
    "variant.duplicate": "two variants share an id",
    "scenario.duplicate": "two scenarios share an id",
    "seed.duplicate": "a seed is listed twice",
    "comparator.unknown": "comparator names no variant",
    "commit_sha.missing": "commit_sha is required (every run record carries it)",
    "scorer.argv_not_allowed": "a command scorer names a worker-declared command, never argv",
    "scorer.pattern": "a regex scorer's pattern does not compile with RE2, or is too long",
    "route.pattern": "a route rule's re:<regex> does not compile with RE2, or is too long",
    "route.no_explicit_base_url": "a variant's HTTP provider uses its built-in default URL",
    "route.base_url_blocked": "a variant's base URL is on the route's block list",
    "route.base_url_not_allowed": "a variant's base URL is not on the route's allow list",
    "route.no_auth": "a variant's HTTP provider has no API key",
    "route.wrong_provider": "a variant's provider kind is not the route's",
    "route.unknown_model": "a variant's model names no provider this machine declares",
    "variant.config": "a variant's config does not fit its kind",
    "campaign.too_large": "more cells than one campaign may hold",
}


@dataclass(frozen=True)
class CampaignError(CodedError):
    codes = CODES
    kind = "campaign"


class CampaignInvalid(DocumentInvalid):
    """A campaign that did not validate; ``errors`` lists every problem, ``code`` the first."""

    kind = "campaign"
