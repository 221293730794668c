"""What every MCP tool works with: settings, the Temporal client and the typed ponder client."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from temporalio.client import Client

from activities.config import Settings
from client.api import Ponder
from client.session import NO_WORKER_WAIT_S, Session, spawn_background_worker, wait_for_worker

__all__ = ["Backend"]


@dataclass
class Backend:
    session: Session

    @property
    def settings(self) -> Settings:
        return self.session.settings

    @property
    def client(self) -> Client:
        return self.session.client

    @property
    def embedded(self) -> bool:
        return self.session.embedded

    @property
    def ponder(self) -> Ponder:
        return Ponder(self.session)

    async def ensure_worker(self) -> None:
        """Someone must run the workflows, and not this process (its runs outlive it): this
        home's background worker in embedded mode, or a worker already polling the task queue
        of a cluster."""
        if self.embedded:
            await asyncio.to_thread(spawn_background_worker, self.settings)
        else:
            await wait_for_worker(self.client, self.settings.task_queue, NO_WORKER_WAIT_S)
