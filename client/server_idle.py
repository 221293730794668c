"""The embedded server's idle period: it stays up ``server_idle_s`` after its last user left, so
a burst of commands (``ponder think``, then ``status``, ``runs``, ``report``) pays for one start.

The last lease holder out does not stop the server: it records when it left (``server.idle``'s
mtime) and makes sure one keeper runs, ``python -m client.server_idle HOME SECONDS``, detached.
The keeper sleeps until the period has passed since the latest departure and then, under the
server lock, stops the server unless someone holds a lease again (that holder, leaving, starts
the period over). Like the background worker's ``--exit-when-idle``, nothing stays up for good.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

from client.embedded import EmbeddedServer, child_environment, live_argv

__all__ = ["KEEPER_POLL_S", "keep_until_idle", "leave_idle"]

KEEPER_POLL_S = 5.0
"""How often a waiting keeper looks again: a late departure moves the deadline later."""


def _idle_marker(server: EmbeddedServer) -> Path:
    return server.home / "server.idle"


def _keeper_record(server: EmbeddedServer) -> Path:
    return server.home / "server-keeper.pid"


def _is_keeper(pid: int, server: EmbeddedServer) -> bool:
    argv = live_argv(pid)
    return argv is not None and b"client.server_idle" in argv and str(server.home).encode() in argv


def leave_idle(server: EmbeddedServer, idle_s: float) -> None:
    """The last holder leaves (called under the server lock): stop the server now when
    ``idle_s`` is 0, else start its idle period and make sure a keeper watches it."""
    if idle_s <= 0 or server.read_state() is None:
        server.stop()
        return
    _idle_marker(server).touch()
    record = _keeper_record(server)
    with contextlib.suppress(OSError, ValueError):
        if _is_keeper(int(record.read_text()), server):
            return  # it reads the new departure time before it decides
    keeper = subprocess.Popen(
        [sys.executable, "-m", "client.server_idle", str(server.home), str(idle_s)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env={
            **child_environment(None, worker=False),
            "PONDER_HOME": str(server.home),
            # The keeper imports ponder from where this process did (a checkout or a venv).
            "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
        },
    )
    record.write_text(str(keeper.pid))


def keep_until_idle(server: EmbeddedServer, idle_s: float) -> None:
    """The keeper: stop the server once nobody held a lease for ``idle_s`` seconds."""
    while True:
        with server._locked():
            if server.live_leases() or server.read_state() is None:
                return  # in use again (its holder starts the next period), or already stopped
            try:
                left = _idle_marker(server).stat().st_mtime + idle_s - time.time()
            except OSError:
                left = 0.0
            if left <= 0:
                server.stop()
                _idle_marker(server).unlink(missing_ok=True)
                return
        time.sleep(min(left, KEEPER_POLL_S))


if __name__ == "__main__":
    keep_until_idle(EmbeddedServer(Path(sys.argv[1])), float(sys.argv[2]))
