"""The one error model: everything ponder refuses or reports to a person is a ``PonderError``.

A ``PonderError`` carries a stable ``code`` (``family.name``, or a plan reason's kebab-case name
from ``workflows.plan.reasons``), a one-line ``message`` that names the field, the rule and the
fix, and optionally the ``fix`` on its own (an MCP client shows it apart). The code is given
where the error is raised, never recovered from the message. Every code is listed, with its
family, meaning and exit status, in the one closed table ``workflows.error_codes``.

```
PonderError(code, message, fix=None)     base of every error a user can see
├── InputInvalid       input.invalid                 workflow input that does not decode
├── RunIdInvalid       run.id_invalid                a run id that breaks the one rule
├── RunDirRefused      run.dir_invalid               a run directory outside the run store
├── RunIdInUse         run.id_in_use                 an id an earlier run's files are under
├── FilesGap           run.files_gap                 an append the file on disk cannot take
│                                                    (the writer sends the file whole)
├── DocumentInvalid    its first error's code        a plan or campaign document; every error
│   ├── PlanInvalid                                  (workflows.plan.errors)
│   └── CampaignInvalid                              (workflows.campaign.errors)
├── TournamentError    profile.*, rank.*, budget.*, prompts.*, judge.*, run.*
├── ConfigError        a flag, file, setting or state refused before anything runs:
│                      config.*, model.*, file.*, option.*, profile.*, prompts.*,
│                      replay.*, run.not_found, run.kind_invalid, budget.*, a plan
│                      reason (stale-gate-token, unknown-step), ...
├── ServerError        server.*                      Temporal cannot be reached or started
│   └── NoWorkerError  worker.missing                nothing polls the task queue
├── DeployError        deploy.*                      a Worker Deployment request refused
│                                                    (worker.deployment)
├── ProviderError      provider.<class>              a model call failed (provider_errors)
├── GenuineError       integrity.failed, ...         what stops a campaign (campaign.workflow)
└── RunFailed          the failure's type            a run ended failed or cancelled
                       (a plan reason such as gate-killed, provider.auth, run.cancelled)
```

``ConfigError``, ``ServerError`` and ``NoWorkerError`` live in ``activities.errors``,
``ProviderError`` (with its own subtree) in ``workflows.provider_errors``, ``RunDirRefused``,
``RunIdInUse`` and ``FilesGap`` in ``activities.run_store`` (their codes in
``workflows.activity_contracts``), ``RunFailed`` in ``client.runs``. A ``RunFailed`` exits 1,
every other error 2. What a run fails with inside Temporal is an ``ApplicationError`` whose
``type`` is one of these codes: that is the wire format of failures, and saved histories depend
on it.

Exceptions from elsewhere that a person can meet (Temporal's RPC and update errors, pydantic's
``ValidationError``, click's usage errors) are translated in one place, ``client.failures``,
which also maps every code to its exit code and MCP error.

Pure: standard library only.
"""

from __future__ import annotations

__all__ = ["PonderError"]


class PonderError(Exception):
    """A refusal or failure a person sees: ``code``, ``message`` and, when known, ``fix``.

    ``str()`` is ``line()``, ``code: message``, the form people (and logs) read. Where the code
    travels apart, as an ``ApplicationError``'s type, the message goes alone (``.message``).
    """

    def __init__(self, code: str, message: str, *, fix: str | None = None) -> None:
        super().__init__(code, message)
        self.code = str(code)  # a plan Reason is a StrEnum: keep its plain value
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return self.line()

    def line(self) -> str:
        return f"{self.code}: {self.message}"

    def __reduce__(self) -> tuple[object, ...]:
        # Exceptions pickle their args; keep the keyword too, and let subclasses with their own
        # constructors (ProviderError, InputInvalid) rebuild from their state.
        return (_rebuild, (type(self), self.__dict__))


def _rebuild(cls: type[PonderError], state: dict[str, object]) -> PonderError:
    error = cls.__new__(cls)
    Exception.__init__(error, state.get("code"), state.get("message"))
    error.__dict__.update(state)
    return error
