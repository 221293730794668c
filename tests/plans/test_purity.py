"""The plan core is pure: importing any module of it loads no Temporal, httpx or activities code.

Each module is imported in a fresh interpreter, so what another test imported cannot hide a
transitive import.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PURE = sorted(
    f"workflows.plan.{p.stem}"
    for p in (ROOT / "workflows" / "plan").glob("*.py")
    if p.stem != "__init__"
)
FORBIDDEN = ("temporalio", "httpx", "activities")
PROBE = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {forbidden})))
"""


def test_the_list_of_pure_modules_is_complete() -> None:
    assert len(PURE) >= 12
    assert "workflows.plan.validate" in PURE and "workflows.plan.ledger" in PURE


def test_each_module_imports_nothing_impure() -> None:
    # One fresh interpreter per module, started together so the check stays a few seconds.
    probe = PROBE.format(forbidden=set(FORBIDDEN))
    running = {
        module: subprocess.Popen(
            [sys.executable, "-c", probe, module],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for module in PURE
    }
    loaded = {}
    for module, process in running.items():
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, (module, err)
        loaded[module] = json.loads(out)
    assert loaded == {module: [] for module in PURE}


def test_the_probe_would_see_an_impure_import() -> None:
    probe = PROBE.format(forbidden=set(FORBIDDEN))
    done = subprocess.run(
        [sys.executable, "-c", probe, "workflows.model_calls"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert "temporalio" in json.loads(done.stdout)
