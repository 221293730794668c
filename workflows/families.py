"""Model families: which vendor's line of models a model name or ``provider:model`` spec is.

Pure. Plans route steps by family (``sonnet`` and ``claude*`` are claude; ``codex*``, ``gpt*``
and ``openai*`` are openai; ``workflows/plan/routing.py``); tournaments ask whether a judge
shares a family with the candidates it judges, since an LLM judge tends to prefer its own
family's answers (self-preference). A ``sim:`` model's family is its ``family=`` option
(``sim:default,family=claude``), else ``sim``.
"""

from __future__ import annotations

from workflows.sim_options import SIM_PROVIDER, SimOptions, SimOptionsError

__all__ = ["canonical_family", "model_family"]

# Beyond the plan families: name prefixes of other well-known lines (checked after those).
_MORE_FAMILIES = (
    ("anthropic", "claude"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("gemini", "google"),
    ("gemma", "google"),
    ("google", "google"),
    ("llama", "meta"),
    ("meta", "meta"),
    ("mistral", "mistral"),
    ("mixtral", "mistral"),
    ("codestral", "mistral"),
    ("qwen", "qwen"),
    ("deepseek", "deepseek"),
    ("grok", "xai"),
)


def canonical_family(name: str) -> str | None:
    """The family a model or family name stands for, or None when it names none."""
    lowered = name.strip().lower()
    if lowered in ("sonnet", "opus", "haiku") or lowered.startswith("claude"):
        return "claude"
    if lowered.startswith(("codex", "gpt", "openai")):
        return "openai"
    return None


def _known(name: str) -> str | None:
    lowered = name.strip().lower()
    found = canonical_family(lowered)
    if found is None:
        found = next(
            (family for prefix, family in _MORE_FAMILIES if lowered.startswith(prefix)), None
        )
    return found


def model_family(spec: str) -> str:
    """The family of a ``provider:model`` spec: from the model name (its last ``/`` segment, so
    ``openrouter:anthropic/claude-3`` is claude), else the provider, else the provider's name."""
    provider, _, name = spec.partition(":")
    provider = provider.strip()
    if provider == SIM_PROVIDER:
        try:
            return SimOptions.parse(name).family or SIM_PROVIDER
        except SimOptionsError:
            return SIM_PROVIDER
    segments = name.split("/")
    return _known(segments[-1]) or _known(segments[0]) or _known(provider) or provider.lower()
