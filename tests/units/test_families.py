"""Direct tests of model families: each name prefix, the order of the parts of a spec, sim's
own family option."""

from __future__ import annotations

import pytest

from workflows.families import canonical_family, model_family


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("sonnet", "claude"),
        ("opus", "claude"),
        ("haiku", "claude"),
        (" Haiku ", "claude"),
        ("claude-3-opus", "claude"),
        ("CLAUDE", "claude"),
        ("codex-mini", "openai"),
        ("gpt-4o", "openai"),
        ("openai-x", "openai"),
        (" GPT-5", "openai"),
        ("gpt-5 ", "openai"),
        ("sonnets", None),
        ("xsonnet", None),
        ("anthropic", None),
        ("o3", None),
        ("gemini", None),
        ("", None),
    ],
)
def test_canonical_families(name: str, family: str | None) -> None:
    assert canonical_family(name) == family


@pytest.mark.parametrize(
    ("spec", "family"),
    [
        ("x:anthropic-model", "claude"),
        ("x:o1-mini", "openai"),
        ("x:o3", "openai"),
        ("x:o4-mini", "openai"),
        ("x:gemini-2.0-flash", "google"),
        ("x:gemma-2", "google"),
        ("x:google-thing", "google"),
        ("x:llama-3", "meta"),
        ("x:meta-thing", "meta"),
        ("x:mistral-large", "mistral"),
        ("x:mixtral-8x7b", "mistral"),
        ("x:codestral", "mistral"),
        ("x:qwen2.5", "qwen"),
        ("x:deepseek-r1", "deepseek"),
        ("x:grok-2", "xai"),
        ("x: Grok-2 ", "xai"),
        ("x: Sonnet", "claude"),
        ("x:o2", "x"),
    ],
)
def test_the_other_known_lines_by_prefix(spec: str, family: str) -> None:
    assert model_family(spec) == family


@pytest.mark.parametrize(
    ("spec", "family"),
    [
        # the last segment of the model name first
        ("openrouter:meta/claude-3", "claude"),
        ("openrouter:anthropic/llama-3", "meta"),
        ("openrouter:a/b/gpt-4", "openai"),
        # then the first segment
        ("openrouter:anthropic/unknown", "claude"),
        ("openrouter:qwen/x/unknown", "qwen"),
        # then the provider, then the provider's own name, lower-cased and trimmed
        ("gemini:unknown", "google"),
        (" Gemini :unknown", "google"),
        ("MyHost:unknown", "myhost"),
        (" MyHost :unknown/other", "myhost"),
        ("noname", "noname"),
        # only the first colon splits the spec
        ("local:llama:latest", "meta"),
        ("host:unknown:gpt", "host"),
    ],
)
def test_a_spec_s_family_from_its_name_segments_then_its_provider(spec: str, family: str) -> None:
    assert model_family(spec) == family


@pytest.mark.parametrize(
    ("spec", "family"),
    [
        ("sim:default", "sim"),
        (" sim :default", "sim"),
        ("sim:default,family=claude", "claude"),
        ("sim:claude", "sim"),  # a sim model's name is not its family
        ("sim:default,nonsense=1", "sim"),  # options that do not parse: still sim
        ("SIM:default", "sim"),
    ],
)
def test_a_sim_model_s_family_is_its_option_else_sim(spec: str, family: str) -> None:
    assert model_family(spec) == family
