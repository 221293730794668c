"""The MCP prompts: the common jobs, each a message telling the host which ponder tool to call
with which arguments.

A prompt's arguments are strings (the protocol's rule); each is checked here, and a missing
required one or an unknown one (``usage.invalid``), a blank one or one past its ceiling
(``input.invalid``) is refused with the argument's name and the fix, as a JSON-RPC
invalid-params error.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

__all__ = ["MAX_ARGUMENT_CHARS", "PROMPTS", "get_prompt", "list_prompts"]

# A prompt argument becomes tool arguments the host sends back: the same ceiling as a document.
MAX_ARGUMENT_CHARS = 1024 * 1024
CANDIDATE_SEPARATOR = "---"


@dataclass(frozen=True)
class Argument:
    name: str
    description: str
    required: bool = False


@dataclass(frozen=True)
class PromptSpec:
    name: str
    title: str
    description: str
    arguments: tuple[Argument, ...]
    render: Callable[[dict[str, str]], str]


def _call(tool: str, arguments: Mapping[str, Any]) -> str:
    return f"`{tool}` with arguments:\n```json\n{json.dumps(arguments, indent=1)}\n```"


def _given(args: dict[str, str], *names: str) -> dict[str, Any]:
    return {name: args[name] for name in names if args.get(name)}


def _think(args: dict[str, str]) -> str:
    call = {"task": args["task"], **_given(args, "rubric", "profile", "provider")}
    return (
        "Use ponder to answer this task with a tournament (candidates generated, judged "
        "pairwise, ranked, improved).\n\n"
        f"1. Call ponder's tool {_call('plan', call)}\n"
        "   It starts nothing: tell the user the calls and rough USD it reports.\n"
        f"2. Then call {_call('think', call | {'wait': True})}\n"
        "   It returns the winner, the final answer and the leaderboard (with wait: false it "
        "returns the run id at once: follow it with `status` and `result`).\n"
        "3. If it ends awaiting_budget, ask the user before calling `extend` with a higher "
        "max_calls or max_usd."
    )


def _candidates(text: str) -> list[dict[str, str]]:
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, list) and all(isinstance(x, str) for x in parsed):
        texts = [x.strip() for x in parsed]
    else:
        lines = text.splitlines()
        texts, part = [], list[str]()
        for line in [*lines, CANDIDATE_SEPARATOR]:
            if line.strip() == CANDIDATE_SEPARATOR:
                texts.append("\n".join(part).strip())
                part = []
            else:
                part.append(line)
    texts = [t for t in texts if t]
    if len(texts) < 2:
        raise _refused(
            "candidates",
            f"holds {len(texts)} candidate(s); ranking needs at least 2",
            f"give a JSON list of strings, or texts separated by a line holding only "
            f"{CANDIDATE_SEPARATOR}",
        )
    return [{"id": f"c{i}", "text": t} for i, t in enumerate(texts, 1)]


def _rank(args: dict[str, str]) -> str:
    call = {
        "task": args["task"],
        "candidates": _candidates(args["candidates"]),
        **_given(args, "rubric", "model"),
        "wait": True,
    }
    return (
        "Use ponder to rank these candidate answers by pairwise judging.\n\n"
        f"Call ponder's tool {_call('rank', call)}\n"
        "It returns the leaderboard (candidate ids c1, c2, ... in the order given): report the "
        "ranking and the winner's text to the user."
    )


def _run_plan(args: dict[str, str]) -> str:
    document = {"document": args["document"], **_given(args, "filename")}
    run: dict[str, Any] = dict(document)
    if args.get("args"):
        try:
            run_args = json.loads(args["args"])
        except ValueError:
            run_args = None
        if not isinstance(run_args, dict):
            raise _refused(
                "args", "is not a JSON object", 'give the run arguments as {"KEY": value, ...}'
            )
        run["args"] = run_args
    return (
        "Use ponder to run this plan document.\n\n"
        f"1. Call ponder's tool {_call('plan_validate', document)}\n"
        "   If it reports errors, show them to the user and stop.\n"
        f"2. Call {_call('plan_run', run | {'wait': True})}\n"
        "3. If the run pauses: awaiting input -> ask the user and call `resume` with the "
        "arguments it names; a human gate -> show the gate and call `resolve_gate` with the "
        "user's decision (approve, revise or kill); a consumer step -> read it with `issuance`, "
        "do the work and answer with `step_done`; awaiting budget -> ask before `extend`.\n"
        "4. Report the outcome with `result`."
    )


def _compare(args: dict[str, str]) -> str:
    call = {"document": args["document"], **_given(args, "filename"), "wait": True}
    return (
        "Use ponder to compare variants with a campaign (variants x scenarios x seeds, ending in "
        "a decision).\n\n"
        f"Call ponder's tool {_call('campaign_run', call)}\n"
        "It returns the decision for each variant and the recommendation: report them to the "
        "user, with the evidence. If it ends awaiting_budget, ask before calling `extend`; "
        "`export` with format markdown gives a report to keep."
    )


PROMPTS: dict[str, PromptSpec] = {
    p.name: p
    for p in (
        PromptSpec(
            "think_on_task",
            "Think on a task",
            "Answer a task with a tournament: estimate it with plan, then run think.",
            (
                Argument("task", "the task to answer", required=True),
                Argument("rubric", "what makes an answer better"),
                Argument("profile", "a built-in or saved profile (default quick)"),
                Argument("provider", "a provider for every role (sim: free and simulated)"),
            ),
            _think,
        ),
        PromptSpec(
            "rank_candidates",
            "Rank candidates",
            "Rank given candidate answers by pairwise judging (the rank tool).",
            (
                Argument("task", "the task the candidates answer", required=True),
                Argument(
                    "candidates",
                    f"a JSON list of texts, or texts separated by a line of {CANDIDATE_SEPARATOR}",
                    required=True,
                ),
                Argument("rubric", "what makes an answer better"),
                Argument("model", "the judge model, provider:model"),
            ),
            _rank,
        ),
        PromptSpec(
            "run_plan",
            "Run a plan",
            "Validate and run a plan document, answering its pauses (plan_validate, plan_run).",
            (
                Argument("document", "the plan document (YAML or JSON text)", required=True),
                Argument("args", "run arguments as a JSON object (${input.KEY})"),
                Argument("filename", "a name for messages; .json parses as JSON"),
            ),
            _run_plan,
        ),
        PromptSpec(
            "compare_variants",
            "Compare variants",
            "Compare variants with a campaign and report its decision (campaign_run).",
            (
                Argument(
                    "document", "the ponder-campaign/1 document (YAML or JSON)", required=True
                ),
                Argument("filename", "a name for messages; .json parses as JSON"),
            ),
            _compare,
        ),
    )
}


USAGE = "usage.invalid"


def _refused(argument: str, problem: str, fix: str, code: str = "input.invalid") -> MCPError:
    """``input.invalid`` for a value that breaks its rule; ``usage.invalid`` for an argument
    missing or not known, the code a tool's arguments and the command line give those."""
    message = f"{code}: prompt argument {argument!r} {problem} (fix: {fix})"
    return MCPError(types.INVALID_PARAMS, message, {"code": code, "message": problem, "fix": fix})


def list_prompts() -> list[types.Prompt]:
    return [
        types.Prompt(
            name=p.name,
            title=p.title,
            description=p.description,
            arguments=[
                types.PromptArgument(name=a.name, description=a.description, required=a.required)
                for a in p.arguments
            ],
        )
        for p in PROMPTS.values()
    ]


def get_prompt(name: str, arguments: Mapping[str, str] | None) -> types.GetPromptResult:
    spec = PROMPTS.get(name)
    if spec is None:
        raise MCPError(
            types.INVALID_PARAMS,
            f"{USAGE}: no prompt {name!r} (fix: use one of {', '.join(PROMPTS)})",
        )
    given = dict(arguments or {})
    known = {a.name for a in spec.arguments}
    for key in given:
        if key not in known:
            known_ones = ", ".join(sorted(known))
            raise _refused(key, f"is not one of {name}'s", f"give only {known_ones}", USAGE)
    for a in spec.arguments:
        value = given.get(a.name)
        if a.required and not (value or "").strip():
            code = USAGE if value is None else "input.invalid"  # left out, or blank
            fix = f"give {a.name}: {a.description}"
            raise _refused(a.name, f"is required by {name}", fix, code)
        if value is not None and len(value) > MAX_ARGUMENT_CHARS:
            raise _refused(
                a.name,
                f"is {len(value)} characters, over {MAX_ARGUMENT_CHARS}",
                "give a shorter text",
            )
    text = spec.render(given)
    return types.GetPromptResult(
        description=spec.description,
        messages=[types.PromptMessage(role="user", content=types.TextContent(text=text))],
    )
