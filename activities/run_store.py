"""The run store: ``<runs_dir>/<run-id>/``, written whole-file and atomically by activities.

Writes stay inside the runs directory: a run id must pass ``workflows.run_ids``, a run
directory that is a symlink (or resolves elsewhere) is refused, and so is a relative path that
leaves its run directory. Every activity that writes a run directory first calls
:func:`check_writer`: it writes only its own workflow's directory or that workflow's children's
(``workflows.run_ids.writer_problem``, from ``activity.info()``, never from input).

A workflow id also belongs to one execution chain: Temporal lets a closed workflow's id start
again (its default id reuse policy), so the first write of a workflow claims its id for its
chain (``workflow.info().first_execution_run_id``, which resets and retries keep) in
``<runs_dir>/.claims/<workflow id>``, and a later execution under that id is refused
``run.id_in_use`` instead of overwriting the earlier run's files.

Every refusal is a ValueError with a ``code``; activities turn it into a non-retryable
ApplicationError (``refusal``) since retrying cannot fix it.

The store itself imports no Temporal SDK (``ponder report`` and ``ponder export`` write through
it without one); the ``write_run_files`` activity lives in ``activities/run_files.py``, and the
two helpers activities call import the SDK when called.

A file that only grows (a trace) may be sent as an *append*: the lines the writer sent before
are already on disk, so only the new ones travel (and enter history). The append names how many
lines the file held before it, so a retried write replaces the same tail; a file with fewer
lines (deleted, or another worker's disk) is ``run.files_gap`` and the writer sends it whole.

With ``encrypt_run_files`` the store seals what it writes (``activities/run_file_crypto.py``):
a ``.jsonl`` line becomes one sealed line, so appends count lines as they do in a plain file.
The claims and the read token stay plain: an id and a capability, no run content.
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from activities.atomic import write_atomically
from activities.raw_events import redact
from activities.run_file_crypto import RunFileCipher
from workflows.activity_contracts import (
    FILES_GAP,
    RUN_DIR_INVALID,
    RUN_ID_IN_USE,
    WRITE_RUN_FILES,
    FileAppend,
    WriteRunFilesInput,
)
from workflows.errors import PonderError
from workflows.run_capabilities import CAPABILITY_INVALID, CAPABILITY_REQUIRED, READ_TOKEN_FILE
from workflows.run_ids import RUN_ID, RunIdInvalid, check_run_id, writer_problem

if TYPE_CHECKING:
    from temporalio.exceptions import ApplicationError

__all__ = [
    "CLAIMS",
    "FILES_GAP",
    "REFUSED",
    "RUN_DIR_INVALID",
    "RUN_ID",
    "RUN_ID_IN_USE",
    "WRITE_RUN_FILES",
    "FileAppend",
    "FilesGap",
    "ReadRefused",
    "RunDirRefused",
    "RunIdInUse",
    "RunIdInvalid",
    "RunStore",
    "WriteRunFilesInput",
    "check_read_token",
    "check_writer",
    "refusal",
]

CLAIMS = ".claims"
"""Under the runs directory; not a run id (a leading dot), so no listing shows it."""
CLAIMS_REMEMBERED = 4096
"""Claims one ``RunStore`` remembers having seen (the oldest is forgotten first, and read from
its file again if it writes again)."""


class RunDirRefused(PonderError, ValueError):
    """A run directory or a path in it that would lead outside the runs directory."""

    def __init__(self, message: str) -> None:
        super().__init__(RUN_DIR_INVALID, message)


class RunIdInUse(PonderError, ValueError):
    """A workflow id that an earlier execution (another chain) already wrote a run under."""

    def __init__(self, message: str) -> None:
        super().__init__(RUN_ID_IN_USE, message)


class FilesGap(PonderError, ValueError):
    """An append whose file holds fewer lines than the writer sent before: send it whole."""

    def __init__(self, message: str) -> None:
        super().__init__(FILES_GAP, message)


class ReadRefused(PonderError, ValueError):
    """Input named another run as a source without that run's read token, or with another
    (``workflows/run_capabilities.py``). Says nothing of the source run beyond its id."""


REFUSED = (RunIdInvalid, RunDirRefused, RunIdInUse, ReadRefused)
"""Every refusal of the run store: catch these and raise :func:`refusal`."""


def refusal(
    exc: RunIdInvalid | RunDirRefused | RunIdInUse | ReadRefused | FilesGap,
) -> ApplicationError:
    """The run store's refusal as an activity failure: coded and never retried."""
    from temporalio.exceptions import ApplicationError

    return ApplicationError(exc.message, type=exc.code, non_retryable=True)


def check_writer(run_id: str, store: RunStore | None = None, chain: str | None = None) -> str:
    """``run_id``, if the workflow of the running activity may write its directory; else
    RunDirRefused. The writer is the workflow id Temporal gives the activity, so no input (of
    the workflow or of the activity) can send a write into another run's directory. With the
    ``store`` and the writer's ``chain``, the workflow id is also claimed for that chain (file
    I/O: call it in a thread); ``chain`` None (an activity an older workflow scheduled) claims
    nothing."""
    from temporalio import activity

    workflow_id = activity.info().workflow_id
    problem = writer_problem(workflow_id, check_run_id(run_id))
    if problem is not None:
        raise RunDirRefused(problem)
    if store is not None and chain is not None and workflow_id is not None:
        store.claim(workflow_id, chain)
    return run_id


class RunStore:
    def __init__(
        self, root: Path, *, secrets: Iterable[str] = (), cipher: RunFileCipher | None = None
    ) -> None:
        self.root = Path(root)
        self.secrets = [s for s in secrets if s]
        """Values redacted from every file written (the worker's configured keys)."""
        self.cipher = cipher
        """Seals every file written (``encrypt_run_files``, ``activities/run_file_crypto.py``);
        None: written plain. An append counts lines either way: a sealed line is one record."""
        self._claimed: dict[str, str] = {}
        """Workflow id -> the chain this process saw holding its claim. A claim file is never
        rewritten or removed, so what it held once it holds for good: a run's later writes
        (every model call of a tournament) skip the claim's file I/O."""
        self._claims_lock = threading.Lock()

    def run_dir(self, run_id: str) -> Path:
        return self.root / check_run_id(run_id)

    def writable_dir(self, run_id: str) -> Path:
        """``run_dir`` for writing: refused if it is a symlink or resolves outside the store."""
        run_dir = self.run_dir(run_id)
        if run_dir.is_symlink() or (
            run_dir.exists() and not run_dir.resolve().is_relative_to(self.root.resolve())
        ):
            raise RunDirRefused(
                f"run directory {run_dir} is a symlink or leads outside {self.root}: "
                "ponder writes only inside the runs directory; remove it or use another run id"
            )
        return run_dir

    def path(self, run_id: str, relative: str) -> Path:
        run_dir = self.writable_dir(run_id)
        return _inside(run_dir, run_dir.resolve(), relative)

    def write(self, run_id: str, relative: str, content: str | bytes) -> Path:
        """Replace ``relative`` whole: readers see the old file or the new one, never half."""
        return self._write(self.path(run_id, relative), content)

    def write_all(
        self, run_id: str, files: dict[str, str], appends: dict[str, FileAppend] | None = None
    ) -> list[str]:
        """``write`` each of ``files`` and ``append`` each of ``appends``. The run directory is
        checked and resolved once for the batch (each target is still resolved and refused if
        it leaves it), and each parent made once: a tournament's write is a dozen files, and
        these path checks cost more file-system calls than the writes themselves."""
        run_dir = self.writable_dir(run_id)
        resolved = run_dir.resolve()
        made: set[Path] = set()
        written = [
            self._write(_inside(run_dir, resolved, rel), text, made) for rel, text in files.items()
        ]
        for rel, append in (appends or {}).items():
            written.append(self._append(_inside(run_dir, resolved, rel), rel, append, made))
        return [str(path) for path in written]

    def append(self, run_id: str, relative: str, append: FileAppend) -> Path:
        """The file's first ``after_lines`` lines, then ``text``, replaced whole (atomically, so
        a reader never sees half, and a retry cuts back to the same lines); FilesGap when it
        holds fewer lines than that."""
        return self._append(self.path(run_id, relative), relative, append)

    def _append(
        self, target: Path, relative: str, append: FileAppend, made: set[Path] | None = None
    ) -> Path:
        try:
            kept = target.read_bytes().splitlines(keepends=True)
        except FileNotFoundError:
            kept = []
        if len(kept) < append.after_lines:
            raise FilesGap(
                f"{relative} holds {len(kept)} lines, not the {append.after_lines} sent before"
            )
        head = b"".join(kept[: append.after_lines])
        text = redact(append.text, self.secrets).encode()
        if self.cipher is not None:
            text = self.cipher.seal_lines(text)
        return self._write(target, head + text, made, sealed=True)

    def _write(
        self,
        target: Path,
        content: str | bytes,
        made: set[Path] | None = None,
        *,
        sealed: bool = False,
    ) -> Path:
        """Write the checked ``target``; ``made``: parents this batch has made already;
        ``sealed``: ``content`` is sealed already (when the store seals at all)."""
        if made is None or target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            if made is not None:
                made.add(target.parent)
        data = redact(content, self.secrets).encode() if isinstance(content, str) else content
        if self.cipher is not None and not sealed:
            data = self.cipher.seal(target.name, data)
        return write_atomically(target, data)

    def claim(self, workflow_id: str, chain: str) -> None:
        """Claim ``workflow_id`` for execution chain ``chain``, or RunIdInUse if another chain
        holds it. Created whole (a linked temp file), so a concurrent first write of the same
        chain reads the claim, never an empty file."""
        if self._claimed.get(workflow_id) == chain:
            return
        claims = self.root / CLAIMS
        path = claims / check_run_id(workflow_id)
        claims.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=claims, prefix=".claim.")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(chain)
            os.link(tmp, path)
            self.create_read_token(workflow_id)
            self._remember(workflow_id, chain)
            return
        except FileExistsError:
            pass
        finally:
            Path(tmp).unlink(missing_ok=True)
        if path.read_text() != chain:
            raise RunIdInUse(
                f"run id {workflow_id!r} is already used by an earlier run (another execution "
                "under the same workflow id): its files are kept; start this run under another "
                "workflow id"
            )
        self.create_read_token(workflow_id)  # a worker killed between the claim and the token
        self._remember(workflow_id, chain)

    def create_read_token(self, run_id: str) -> None:
        """The run's ``read-token`` (128 random bits as hex, mode 0600), made once when the run
        claims its id, before it writes anything else; never replaced, never sent to history by
        the run itself. Created whole (a linked temp file), so a reader never sees it empty."""
        run_dir = self.writable_dir(run_id)
        run_dir.mkdir(parents=True, exist_ok=True)
        target = run_dir / READ_TOKEN_FILE
        if target.exists() or target.is_symlink():
            return
        fd, tmp = tempfile.mkstemp(dir=run_dir, prefix=".read-token.")  # created 0600
        try:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(16) + "\n")
            os.link(tmp, target)
        except FileExistsError:
            pass
        finally:
            Path(tmp).unlink(missing_ok=True)

    def remembers(self, workflow_id: str | None, chain: str | None) -> bool:
        """Whether ``claim(workflow_id, chain)`` needs no file (it is remembered, or there is
        nothing to claim)."""
        return workflow_id is None or chain is None or self._claimed.get(workflow_id) == chain

    def _remember(self, workflow_id: str, chain: str) -> None:
        with self._claims_lock:  # claims are made in worker threads
            self._claimed[workflow_id] = chain
            if len(self._claimed) > CLAIMS_REMEMBERED:
                del self._claimed[next(iter(self._claimed))]


def check_read_token(root: Path, run_id: str, token: str | None) -> None:
    """Nothing, if ``token`` is run ``run_id``'s read token; else ReadRefused. Called before
    anything of that run is read. The file is read without following links, and compared in
    constant time; the refusal names only the run id (never a label, a file or an output)."""
    check_run_id(run_id)
    if not token:
        raise ReadRefused(
            CAPABILITY_REQUIRED,
            f"reading run {run_id!r} needs its read token in calls.read_tokens; fix: start the "
            "run with ponder (the CLI, the MCP server or the Python client read it from the "
            f"source run's directory), or copy it from <runs_dir>/{run_id}/{READ_TOKEN_FILE}",
        )
    stored = _stored_token(Path(root), run_id)
    if stored is None or not hmac.compare_digest(stored.encode(), token.encode()):
        raise ReadRefused(
            CAPABILITY_INVALID,
            f"the read token given for run {run_id!r} is not that run's: nothing of it is read; "
            f"fix: give the token in <runs_dir>/{run_id}/{READ_TOKEN_FILE} (the ponder client "
            "reads it for you when you can read that directory)",
        )


def _stored_token(root: Path, run_id: str) -> str | None:
    """The token in ``<root>/<run_id>/read-token``, or None: no such run, no token, or a run
    directory or token file that is a link or not a small regular file."""
    run_dir = root / run_id
    try:
        if run_dir.is_symlink() or not run_dir.resolve().is_relative_to(root.resolve()):
            return None
        fd = os.open(run_dir / READ_TOKEN_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        text = f.read(65).decode("ascii", errors="replace").strip()
    return text or None


def _inside(run_dir: Path, resolved: Path, relative: str) -> Path:
    """``run_dir / relative`` resolved (symlinks followed), refused unless it stays inside the
    run directory (``resolved``: ``run_dir`` resolved)."""
    target = (run_dir / relative).resolve()
    if not target.is_relative_to(resolved):
        raise RunDirRefused(f"{relative!r} leaves the run directory")
    return target
