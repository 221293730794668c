"""A shared ledger is drawn on only with its draw token, through the real ``temporal`` binary.

Input that names a ledger without its token is refused at decode (``ledger.token_required``),
with a wrong token or a name the worker does not declare before any call is made
(``ledger.token_invalid``, ``ledger.unknown``): the ledger's entity is never even started. A
hostile ``ledger_room`` signal (junk, or too many arguments) changes nothing. A ledger
workflow started first by someone without the token (with no limits) is never drawn on or
extended, and junk input fails it with ``input.invalid``. A probe Ask answers within 10 s
meanwhile, and the worker exits within 10 s of SIGTERM (the harness).
"""

from __future__ import annotations

import uuid

from temporalio.client import Client

from activities.config import Settings
from activities.ledger import draw_token
from client.ledgers import ledger_view
from tests.hostile.harness import dumps, shared_worker
from workflows.ledger.types import ledger_workflow_id
from workflows.names import LEDGER, SIGNAL_LEDGER_ROOM, TOURNAMENT, UPDATE_LEDGER_EXTEND

CODED_WITHIN = 30.0  # a loaded 2-core machine


async def test_a_ledger_needs_its_draw_token_and_a_name_the_worker_declares(
    client: Client, settings: Settings, server_address: str
) -> None:
    name = f"h{uuid.uuid4().hex[:10]}"
    toml = f"[ledgers.{name}]\ncalls = 3\n"
    async with shared_worker(client, settings, server_address, toml=toml) as worker:
        cases = {
            "no-token": ({"name": name}, "ledger.token_required"),
            "bad-token": ({"name": name, "token": "ab" * 16}, "ledger.token_invalid"),
            "unknown": ({"name": f"x{name}", "token": "ab" * 16}, "ledger.unknown"),
        }
        for case, (ledger, _) in cases.items():
            document = {"task": "Sort a list.", "calls": {"ledger": ledger}}
            await worker.start(TOURNAMENT, f"h-{case}-{name}", dumps(document))
        await worker.probe()
        for case, (_, code) in cases.items():
            error = await worker.failure(f"h-{case}-{name}", within=CODED_WITHIN)
            assert error.type == code, (case, error.message)
            assert "ledger" in error.message
        assert await ledger_view(client, name) is None  # nothing ever drew on it

        # A run that is not waiting on any ledger takes junk ledger_room signals in its stride.
        await worker.start(TOURNAMENT, f"h-live-{name}", dumps({"task": "Sort a list."}))
        await worker.signal(f"h-live-{name}", SIGNAL_LEDGER_ROOM, dumps({"junk": True}))
        await worker.signal(f"h-live-{name}", SIGNAL_LEDGER_ROOM, dumps("a"), dumps("b"))
        result = await worker.handle(f"h-live-{name}").result()
        assert result["status"] == "completed"


async def test_a_ledger_started_without_its_token_is_never_drawn_on_or_extended(
    client: Client, settings: Settings, server_address: str
) -> None:
    name = f"h{uuid.uuid4().hex[:10]}"
    toml = f"[ledgers.{name}]\ncalls = 3\n"
    entity = ledger_workflow_id(name)
    async with shared_worker(client, settings, server_address, toml=toml) as worker:
        # Squatted: started first by someone with no token, with no limits.
        await worker.start(LEDGER, entity, dumps({"name": name, "limits": {}}))
        code, output = await worker.update(entity, UPDATE_LEDGER_EXTEND, dumps({"calls": 10**6}))
        assert code != 0 and "draw token" in output
        code, output = await worker.update(entity, UPDATE_LEDGER_EXTEND, dumps({"calls": -5}))
        assert code != 0, output
        # A run with the real token refuses to draw on it (and so makes no call).
        token = draw_token(settings, name)
        document = {"task": "Sort a list.", "calls": {"ledger": {"name": name, "token": token}}}
        await worker.start(TOURNAMENT, f"h-squat-{name}", dumps(document))
        await worker.probe()
        error = await worker.failure(f"h-squat-{name}", within=CODED_WITHIN)
        assert error.type == "ledger.token_invalid" and "started without" in error.message
        view = await ledger_view(client, name)
        assert view is not None and (view.calls, view.holds, view.draws) == (0, 0, 0)
        # Junk input fails the entity with a code: the next draw would start a good one.
        await worker.handle(entity).terminate("squatter removed")
        await worker.start(LEDGER, entity, dumps({"name": "Not A Name"}))
        assert (await worker.failure(entity, within=CODED_WITHIN)).type == "input.invalid"
