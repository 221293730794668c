"""Every benchmark runs in its smoke mode (tiny sizes), so none rots unnoticed: one whose workflow
no longer matches an activity's signature hangs or fails here instead of in ``make bench``.

Benchmarks measure and never assert; this test only checks that each runs to its last line.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # started first: see tests/conftest.py

BENCHMARKS = sorted(
    path.stem
    for path in (Path(__file__).parent.parent / "benchmarks").glob("*.py")
    # bare_calls: a workflow the others import; critical_path: pipelining's replay;
    # activation_phases: tournament_overhead's instrument (its smoke mode turns it on);
    # chaos asserts rather than measures (tests/test_chaos.py runs its smoke), chaos_checks
    # and chaos_provider are its parts
    if path.stem
    not in {
        "__init__",
        "activation_phases",
        "bare_calls",
        "critical_path",
        "chaos",
        "chaos_checks",
        "chaos_provider",
    }
)


def test_every_benchmark_module_is_listed_in_make_bench() -> None:
    makefile = (Path(__file__).parent.parent / "Makefile").read_text()
    assert [name for name in BENCHMARKS if f"benchmarks.{name}" not in makefile] == []


@pytest.mark.timeout(450)  # the tournament benchmark runs a 285-call paper profile several times
@pytest.mark.parametrize("name", BENCHMARKS)
async def test_the_benchmark_runs_in_smoke_mode(name: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PONDER_", "TEMPORAL_"))}
    env["PONDER_HOME"] = str(tmp_path / "home")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        f"benchmarks.{name}",
        "--smoke",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        out, _ = await asyncio.wait_for(process.communicate(), 400)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise AssertionError(f"benchmarks.{name} --smoke did not finish within 400 s") from None
    text = out.decode(errors="replace")
    assert process.returncode == 0, text[-3000:]
    assert text.strip(), f"benchmarks.{name} printed nothing"
