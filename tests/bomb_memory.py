"""What refusing a gzip bomb allocates, measured in a fresh interpreter: prints the peak bytes.

``tracemalloc`` is started and stopped here, with no Temporal worker in the process: stopping it
while the worker's native threads allocate crashed a test process (CPython 3.11, a segfault in
an xdist worker). The bomb travels over real HTTP from the fake provider to ponder's bounded
reader (``activities/providers/http._bounded_body``), as in a call.

    python -m tests.bomb_memory
"""

from __future__ import annotations

import asyncio
import gzip
import tracemalloc

import httpx

from activities.providers.http import _bounded_body
from tests.fakes import FakeProvider, Reply
from workflows.bounds import MAX_RESPONSE_BYTES


async def peak_while_refusing() -> int:
    # 256 MiB of JSON text in ~250 KiB of gzip: the bound is on what is decoded, chunk by chunk.
    text = b'{"choices": [{"message": {"content": "' + b"x" * (256 * 1024 * 1024) + b'"}}]}'
    bomb = gzip.compress(text, compresslevel=9)
    assert len(bomb) < MAX_RESPONSE_BYTES
    del text
    fake = FakeProvider()
    fake.replies.append(Reply(raw=bomb, headers={"content-encoding": "gzip"}))
    try:
        async with httpx.AsyncClient() as http:
            tracemalloc.start()
            try:
                async with http.stream("POST", fake.url, content=b"{}") as response:
                    body = await _bounded_body(response)
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
    finally:
        fake.close()
    assert body is None, "the bomb was read whole"
    return peak


if __name__ == "__main__":
    print(asyncio.run(peak_while_refusing()))
