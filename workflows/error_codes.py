"""The one closed table of every error code ponder raises, fails a run with or answers with.

A code is ``family.name``: the family is what was refused or failed (``model``, ``config``,
``run``, ``provider``, ...), the name a snake_case word for the rule. One exception keeps its
spelling because recorded histories and users' scripts match on it: a plan run's *reasons*
(why it failed, paused or refused a control message: ``gate-killed``, ``steps-stranded``) are
kebab-case words with no dot, one closed list (``workflows.plan.reasons``), and ``plan-invalid``
(a plan that did not validate, failing a ``PlanRun``) is spelled like them. Their family is
``plan``. Codes are public: add codes, never rename one.

Each code carries its family, a one-line meaning, and the exit status of a ``ponder`` command
that meets it: ``EXIT_USAGE`` (2) for a refusal (nothing ran, or the run was left as it was),
``EXIT_FAILED`` (1) for what only ends a run, ``EXIT_PAUSED`` (75) for a pause reason, None for
a cause recorded in a run's trace that ends no command itself. A run that fails exits 1 with
whatever code it failed with. The exit statuses are defined here, once; ``client.exit_codes``
re-exports them for the CLI.

Document validation codes and plan reasons keep their own closed tables (``workflows.plan.errors``,
``workflows.campaign.errors``, ``workflows.plan.reasons``), which their error types enforce; this
table takes them whole. ``docs/errors.md`` lists every code from ``markdown_table()``
(``python -m workflows.error_codes`` rewrites the table; a test fails when they differ), and a
test reads every module to check that each code raised anywhere is here and each code here is
raised somewhere.

Pure: standard library and the pure tables above only.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

__all__ = [
    "EXIT_FAILED",
    "EXIT_PAUSED",
    "EXIT_USAGE",
    "ErrorCode",
    "codes",
    "family_of",
    "lookup",
    "markdown_table",
]

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_PAUSED = 75
"""75 is ``EX_TEMPFAIL`` of ``sysexits.h``, "try again later": what a paused run asks of a
script."""

DOTTED = re.compile(r"[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*")
KEBAB = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)+")


@dataclass(frozen=True)
class ErrorCode:
    code: str
    meaning: str
    exit: int | None

    @property
    def family(self) -> str:
        return family_of(self.code)


def family_of(code: str) -> str:
    """``model.key_missing`` -> ``model``; a kebab-case plan code -> ``plan``."""
    if DOTTED.fullmatch(code):
        return code.partition(".")[0]
    if KEBAB.fullmatch(code):
        return "plan"
    raise ValueError(f"{code!r} is neither family.name nor a kebab-case plan code")


R, F, P = EXIT_USAGE, EXIT_FAILED, EXIT_PAUSED

_PLATFORM: tuple[tuple[str, int | None, str], ...] = (
    # what every command and workflow shares
    ("usage.invalid", R, "a call's shape is wrong: a flag or argument unknown or missing"),
    ("input.invalid", R, "a value breaks its rule: a flag, an argument or a run's input"),
    ("internal.error", F, "a bug: see $PONDER_HOME/logs (--debug shows the traceback)"),
    ("option.invalid", R, "an option's value breaks its rule"),
    ("option.missing", R, "a required option is absent"),
    ("option.removed", R, "an option that is no longer a setting (the message says where it went)"),
    ("file.unreadable", R, "a file named on the command line or in input cannot be read"),
    ("config.unreadable", R, "the configuration file cannot be read"),
    ("config.syntax", R, "the configuration file is not valid TOML"),
    ("config.invalid", R, "a configuration setting breaks its rule"),
    ("secrets.unreadable", R, "the secrets file cannot be read"),
    ("encryption.keyring_invalid", R, "the keyring cannot be read or breaks its format"),
    ("encryption.key_unknown", F, "a payload names a key id this keyring does not list"),
    ("encryption.payload_invalid", F, "an encrypted payload does not authenticate under its key"),
    ("encryption.token_missing", R, "ponder codec-server without a bearer token to require"),
    ("encryption.run_files_need_keyring", R, "encrypt_run_files is on but no keyring is set"),
    ("encryption.run_file_locked", R, "a run file is encrypted with a key this keyring lacks"),
    ("encryption.run_file_invalid", R, "an encrypted run file does not authenticate"),
    # models and providers
    ("model.invalid", R, "a model id is not provider:name"),
    ("model.provider_unknown", R, "a model names a provider the configuration does not declare"),
    ("model.key_missing", R, "a provider's API key is not set"),
    ("model.options_invalid", R, "a sim model's options break their rules"),
    ("model.base_url_invalid", R, "a provider's base URL is not an http(s) URL it may use"),
    ("model.command_undeclared", R, "a command model names no command the worker declares"),
    ("model.command_unstartable", R, "a declared command cannot be started"),
    ("model.mcp_hint_invalid", R, "an mcp: model's hint breaks its rule"),
    ("provider.transport", F, "connection trouble or a 5xx from the provider (retried)"),
    ("provider.rate_limited", F, "429 from the provider (retried after Retry-After)"),
    ("provider.timeout", F, "no answer within the call timeout (retried)"),
    ("provider.malformed_output", F, "the provider answered something unparseable"),
    ("provider.response_too_large", F, "a response body over 1 MiB (read no further)"),
    ("provider.policy_refusal", F, "the provider refused on content policy"),
    ("provider.dispatch", F, "a command provider exited non-zero"),
    ("provider.auth", F, "401 or 403: the key is missing or wrong"),
    ("provider.bad_request", F, "any other 4xx: the request itself is wrong"),
    ("provider.session_gone", F, "mcp: no MCP session connected to answer (waited out)"),
    ("provider.replay_miss", F, "wire replay: no recorded exchange (on_miss throw)"),
    (
        "provider.replay_closed",
        F,
        "wire replay: no recorded exchange (fail-closed, a synthetic 599)",
    ),
    ("provider.retry_later", F, "the provider asked for a longer wait than the call may take"),
    ("provider.config", F, "the worker's configuration refused the call when it was made"),
    ("provider.unroutable", F, "no worker polls the provider queue a call was routed to"),
    ("replay.source_invalid", R, "a replay model names no recorded run this worker may read"),
    ("replay.too_large", R, "a replay recording is over the size a replay reads"),
    ("mcp.no_session", R, "an mcp: model with no connected `ponder mcp` session to answer it"),
    ("mcp.remote_refused", R, "ponder mcp --http on a non-loopback address without --allow-remote"),
    ("mcp.token_missing", R, "--allow-remote without a bearer token of 16 characters or more"),
    ("mcp.request_state_unknown", R, "a tool call's requestState names no waiting call here"),
    ("resource.invalid", R, "an MCP resource URI that is not a ponder resource"),
    # the server and workers
    ("server.unavailable", R, "the Temporal server cannot be reached"),
    ("server.refused", R, "the Temporal server refused a request"),
    ("server.binary_missing", R, "the embedded server's binary is not installed"),
    ("server.port_taken", R, "the embedded server's port is in use by something else"),
    ("server.start_failed", R, "the embedded server did not start"),
    ("server.not_running", R, "no embedded server runs for this home"),
    ("worker.missing", R, "no worker polls the task queue"),
    ("worker.metrics_bind_in_use", R, "the worker cannot listen on its metrics address (taken)"),
    ("worker.metrics_bind_invalid", R, "the worker's metrics address is not HOST:PORT"),
    ("deploy.embedded", R, "worker versioning asked of the embedded server (it takes a cluster)"),
    ("deploy.not_found", R, "no worker of the named deployment has polled the server"),
    ("deploy.version_unknown", R, "a build id that is not a version of the deployment"),
    ("deploy.promote_refused", R, "the server refused to make a version current (a queue missing)"),
    ("telemetry.otel_missing", R, "otlp_endpoint is set but ponder[otel] is not installed"),
    # runs
    ("run.id_invalid", R, "a run id breaks [A-Za-z0-9][A-Za-z0-9._-]*, at most 128 characters"),
    ("run.id_in_use", R, "a run id an earlier or live run already has"),
    ("run.dir_invalid", R, "a run directory or path that would lead outside the run store"),
    ("run.files_gap", None, "an append the file on disk cannot take (the writer sends it whole)"),
    ("run.capability_required", R, "input reads another run without that run's read token"),
    ("run.capability_invalid", R, "input reads another run with a read token that is not its own"),
    ("ledger.spent", P, "a shared ledger has no room this period (the run waits awaiting_budget)"),
    ("ledger.unknown", R, "input names a ledger the worker does not declare ([ledgers.NAME])"),
    ("ledger.token_required", R, "input names a ledger without its draw token"),
    ("ledger.token_invalid", R, "input carries a draw token that is not the ledger's"),
    ("ledger.extend_refused", R, "ponder ledger extend below what the period has spent"),
    ("run.not_found", R, "no run has this id"),
    ("run.kind_invalid", R, "the id names a run of another kind than the command's"),
    ("run.not_ready", R, "the run does not answer yet"),
    ("run.ended", R, "the run has already ended: nothing to control"),
    ("run.query_failed", R, "the run cannot answer the query"),
    ("run.cancelled", F, "the run was cancelled"),
    ("run.terminated", F, "the run was terminated"),
    ("run.timed_out", F, "the run passed its execution timeout"),
    ("run.failed", F, "the run failed with no code of its own"),
    ("control.refused", R, "a control message (an update) the run refused"),
    ("export.too_large", R, "a run file too large to bundle"),
    # tournaments and profiles
    ("profile.invalid", R, "a profile field breaks a rule (n, k, t, m, lambda, temperatures)"),
    ("profile.too_large", R, "the run's history would pass half of Temporal's limits"),
    ("profile.not_found", R, "no saved profile has this name"),
    ("profile.exists", R, "a saved profile already has this name"),
    ("profile.secret", R, "a profile holds a secret-shaped key"),
    ("rank.k_required", R, "rank mode k-regular without rank.k"),
    ("rank.k_invalid", R, "rank.k cannot form a k-regular schedule over n candidates"),
    (
        "rank.max_calls_required",
        R,
        "all-pairs over 100 pairs without a large enough rank.max_calls",
    ),
    ("rank.max_calls_exceeded", R, "the rank block needs more calls than its rank.max_calls"),
    ("budget.planned_calls_exceeded", R, "the plan's nominal calls exceed max_calls"),
    ("budget.unpriced_model", R, "max_usd with a model that has no price"),
    ("budget.exhausted", F, 'a limit was reached with on_budget_exhausted="fail"'),
    ("budget.extend_refused", R, "a budget extension the run refused"),
    ("prompts.invalid", R, "a prompt override file or value breaks its rule"),
    ("prompts.unknown_variable", R, "a prompt override names a {variable} its role does not have"),
    ("judge.persistent_invalid_json", F, "every attempt of one judge call was unparseable"),
    # plans beyond validation
    ("plan-invalid", R, "a plan that does not validate, given to a PlanRun"),
    ("plan.executor_invalid", R, "an --executor FAMILY=PROVIDER:MODEL that breaks its rule"),
    ("capture.invalid", None, "a training pair that cannot be written (recorded; the run goes on)"),
    ("capture.io", None, "the training directory refused a write (recorded; the run goes on)"),
    ("notify.unknown", None, "a gate escalation names a notifier the worker does not declare"),
    ("notify.refused", None, "a notifier refused the escalation post"),
    ("notify.transport", None, "a notifier could not be reached (retried)"),
    ("notifier.url_missing", R, "a [notifiers.NAME] without url or url_env"),
    ("notifier.url_invalid", R, "a notifier URL that is not an http(s) URL it may use"),
    ("worktree.git", None, "a worktree fan-out's git step failed (the cause of a plan reason)"),
    ("worktree.tampered", None, "an item's worktree changed what git runs (cause of a reason)"),
    # campaigns beyond validation
    ("document.plan_path", R, "over MCP, a campaign variant names a plan file, not a document"),
    ("record.invalid", F, "a campaign cell's run record does not validate"),
    ("integrity.failed", F, 'a cell\'s capture integrity failed under integrity: "throw"'),
)

_REASON_EXIT = {"preflight": F, "failure": F, "pause": P, "control": R}
_REASON_MEANING: dict[str, str] = {
    "trace-emit-required": "a loop-plan/1 plan without trace: {emit: true}",
    "plan-model-unroutable": "a step's model or executor routes to no provider",
    "artifact-path-escapes-root": "the workspace or a path leaves the worker's roots",
    "same-family-qe-refused": "a QE step in the coder's family, not waived",
    "reservation-unsatisfiable": "the budget cannot cover a boundary's worst case",
    "escalation-unroutable": "a gate escalation names a notifier the worker lacks",
    "worktree-unavailable": "worktree isolation without git or a git work tree",
    "dispatch-timeout": "a step's call did not answer in time",
    "dispatch-dead": "a step's call failed for good",
    "prompt-over-ceiling": "a rendered prompt is over its ceiling",
    "policy-refusal": "the provider refused a step on content policy",
    "malformed-output": "a step's output breaks its contract",
    "gate-verdict-unparseable": "a model gate's verdict cannot be read",
    "gate-failed": "a model gate failed with no redo left",
    "gate-killed": "a human gate was killed",
    "gate-rounds-exhausted": "a gate's revise rounds ran out",
    "deliverable-not-landed": "a step's declared file did not land",
    "join-unsatisfied": "a fan-out's join is not satisfied",
    "budget-invariant-violated": "the ledger's own consistency check failed",
    "budget-extension-exhausted": "a budget extension past its cap",
    "wall-extension-exhausted": "a wall-clock extension past its cap",
    "ensure-failed": "an ensure predicate does not hold",
    "iterate-exhausted": "iterate reached max before until held",
    "expr-failed": "a CEL expression failed to evaluate",
    "expr-too-costly": "CEL evaluation overran its time",
    "step-budget-exhausted": "a step's or fan-out's own budget ran out",
    "subflow-budget-exhausted": "a sub-flow's budget ran out",
    "gate-deadline-expired": "a gate deadline's kill ended the run",
    "worktree-merge-conflict": "a worktree item's changes do not apply",
    "steps-stranded": "steps that can never run (each named, with why)",
    "budget-exhausted": "the run's budget ran out: extend it to go on",
    "plan-pause": "a pause step waits for its resume argument",
    "gate-pending": "a human gate waits for a decision",
    "consumer-pending": "a consumer step waits for its executor",
    "stale-input-refused": "a resume value that conflicts with the one taken",
    "stale-gate-token": "a gate decision with an old or unknown token",
    "unknown-step": "a control message names no such step",
    "invalid-decision": "a gate decision that is not approve, revise or kill",
    "extension-below-spent": "an extension below what is already spent",
    "stale-dispatch-token": "a step_done with a missing, superseded or answered token",
    "invalid-result": "a step_done result that breaks its form",
    "invalid-label": "a checkpoint label that breaks its rule or is taken",
    "checkpoint-not-found": "no checkpoint has this label",
    "checkpoint-busy": "a checkpoint while an engine call is in flight",
}
_REASON_GROUP = {
    "preflight": "refused at preflight",
    "failure": "failed",
    "pause": "paused",
    "control": "refused",
}


@cache
def codes() -> dict[str, ErrorCode]:
    """Every code, by family; nothing outside it is a code. Built on first use, so the CLI's
    exit statuses load none of the document tables."""
    from workflows.campaign.errors import CODES as CAMPAIGN_CODES
    from workflows.plan.errors import CODES as PLAN_CODES
    from workflows.plan.reasons import GROUPS

    table: dict[str, ErrorCode] = {}

    def add(code: str, exit: int | None, meaning: str) -> None:
        if code in table:
            raise ValueError(f"error code {code!r} is listed twice")
        family_of(code)
        table[code] = ErrorCode(code, meaning, exit)

    for code, exit, meaning in _PLATFORM:
        add(code, exit, meaning)
    for code in sorted(PLAN_CODES.keys() | CAMPAIGN_CODES.keys()):
        meaning = PLAN_CODES.get(code) or CAMPAIGN_CODES[code]
        add(code, R, f"invalid document: {meaning}")
    for group, reasons in GROUPS.items():
        for reason in reasons:
            meaning = f"plan run {_REASON_GROUP[group]}: {_REASON_MEANING[reason.value]}"
            add(reason.value, _REASON_EXIT[group], meaning)
    return dict(sorted(table.items(), key=lambda item: (item[1].family, item[0])))


def lookup(code: str) -> ErrorCode:
    """The code's entry; an unlisted code is a bug in whoever raised it."""
    try:
        return codes()[code]
    except KeyError:
        raise ValueError(f"unknown error code {code!r}: add it to workflows.error_codes") from None


def markdown_table() -> str:
    """The table ``docs/errors.md`` shows: every code, its family, exit status and meaning."""
    rows = ["| code | family | exit | meaning |", "| --- | --- | --- | --- |"]
    for entry in codes().values():
        exit = "-" if entry.exit is None else str(entry.exit)
        meaning = entry.meaning.replace("|", "\\|")
        rows.append(f"| `{entry.code}` | {entry.family} | {exit} | {meaning} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    # Rewrite the page's table between its markers (the page's prose is left as it is).
    page = Path(__file__).resolve().parent.parent / "docs" / "errors.md"
    text = page.read_text(encoding="utf-8")
    start, end = "<!-- codes:start -->\n", "<!-- codes:end -->"
    head, _, rest = text.partition(start)
    _, _, tail = rest.partition(end)
    page.write_text(f"{head}{start}{markdown_table()}{end}{tail}", encoding="utf-8")
    sys.stdout.write(f"wrote {page}\n")
