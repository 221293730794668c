"""Plan validation time for large plans (goal: a 1,000-step plan under 100 ms).

Measures, never asserts. The plan mixes every part-1 kind: agents with references to earlier
steps, model gates with redo routes, pauses, human gates, and fan-outs with two-step chains.
"Parse + validate" starts from JSON text (what `ponder plan validate` does for a .json file);
"validate" starts from the parsed document; "rules" is the cross-field pass on a loaded plan
(what a workflow runs on decoded input). The "+ CEL" rows give every agent step a distinct
``ensure`` expression (and every tenth step becomes a ``set`` step with two values): "cold"
parses each distinct text (the cache cleared first), "warm" is a plan validated again in the
same process (what a workflow's replay, or a second run of the plan, pays).

Last, the whole command a person runs: ``ponder plan validate`` of a one-step plan, its median
and best wall time and median CPU over ``--repeats`` processes, next to ``python -c pass`` (the
interpreter's own start). Its modules are most of that time: ``python -X importtime -m client
plan validate FILE`` says which.

    python -m benchmarks.plan_validation [--repeats 15] [--steps 1000]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workflows.plan.boundaries import boundaries, plan_totals
from workflows.plan.expressions import analyse
from workflows.plan.model import Plan
from workflows.plan.rules import check_plan
from workflows.plan.validate import validate_document, validate_text


def make_plan(steps: int) -> dict[str, Any]:
    out: list[dict[str, Any]] = []
    previous: str | None = None
    while len(out) < steps:
        n = len(out)
        deps: list[str] = [previous] if previous else []
        shape = n % 10
        if shape == 3 and previous:
            out.append(
                {
                    "id": f"g{n}",
                    "kind": "gate",
                    "deps": deps,
                    "prompt": f"Review ${{steps.{previous}.output}}. End with GATE: PASS.",
                    "fail_route": previous,
                    "max_redos": 1,
                }
            )
        elif shape == 5:
            out.append({"id": f"p{n}", "kind": "pause", "deps": deps,
                        "pause": {"state": "WAIT", "resume_arg": f"arg{n}"}})  # fmt: skip
        elif shape == 7 and len(out) + 3 <= steps:
            out.append(
                {
                    "id": f"f{n}",
                    "kind": "fanout",
                    "deps": deps,
                    "fanout": {"over": [f"item{i}" for i in range(8)], "max_fanout": 6,
                               "chain": [f"f{n}.a", f"f{n}.b"], "concurrency": 3,
                               "join": "quorum:4"},
                }
            )  # fmt: skip
            out.append({"id": f"f{n}.a", "kind": "agent", "prompt": "first"})
            out.append({"id": f"f{n}.b", "kind": "agent", "deps": [f"f{n}.a"], "prompt": "then"})
            previous = f"f{n}"
            continue
        elif shape == 9 and previous:
            out.append({"id": f"h{n}", "kind": "gate", "deps": deps,
                        "gate": {"on_revise": previous, "max_rounds": 2}})  # fmt: skip
        else:
            out.append(
                {
                    "id": f"a{n}",
                    "kind": "agent",
                    "deps": deps,
                    "prompt": f"Step {n}: go on from ${{steps.{previous}.output}} for ${{input.x}}"
                    if previous
                    else "Start with ${input.x}",
                    "model": "claude",
                    "idempotent": True,
                    "retry": {"max_attempts": 2, "on": ["timeout"]},
                    "artifacts": {"writes": [f"out/{n}.md"]},
                    "deliverable": "file",
                }
            )
        previous = out[-1]["id"]
    return {"schema": "ponder-plan/1", "name": f"bench-{steps}", "steps": out[:steps]}


def with_expressions(doc: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """The plan with a distinct CEL expression on many top-level agent steps, every tenth
    of them a set step with two values instead; and how many distinct texts that makes."""
    steps: list[dict[str, Any]] = []
    texts: set[str] = set()
    for n, step in enumerate(doc["steps"]):
        if step["kind"] == "agent" and "." not in step["id"]:
            if n % 10 == 1:
                values = {"a": f"size(input.x) + {n}", "b": f"'v{n}-' + input.x"}
                step = {"id": step["id"], "kind": "set", "deps": step.get("deps", [])}
                step["set"] = values
                texts |= set(values.values())
            elif n % 4 == 0:
                # Not every step: 1,000 steps stay inside a plan's 16,000 characters of
                # distinct expressions (more is refused, expr.too_complex).
                text = f"size(result) > {n} && result.startsWith('ok')"
                step = {**step, "ensure": [{"expr": text}]}
                texts.add(text)
        steps.append(step)
    return {**doc, "steps": steps}, len(texts)


def cold(doc: dict[str, Any]) -> object:
    analyse.cache_clear()
    return validate_document(doc)


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, float, float]:
    """Median and best wall ms, and median CPU ms (steadier on a shared, loaded machine)."""
    fn()  # warm up
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return statistics.median(wall), min(wall), statistics.median(cpu)


def totals(plan: Plan) -> object:
    return plan_totals(plan, boundaries(plan))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--steps", type=int, nargs="*", default=[100, 1000])
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes: a few seconds, for the test suite"
    )
    args = parser.parse_args()
    if args.smoke:
        args.repeats, args.steps = 1, [20]
    print(f"{'steps':>6} {'what':<28} {'median ms':>10} {'min ms':>8} {'cpu ms':>8}")
    for steps in args.steps:
        doc = make_plan(steps)
        text = json.dumps(doc)
        check = validate_document(doc)
        # Every rule runs either way; the 1,000-step shape (file deliverables, retries, a region
        # every ten steps) has a worst case past half of Temporal's history limit.
        codes = {e.code for e in check.errors}
        assert codes <= {"plan.too_large"}, [e.line() for e in check.errors][:5]
        if codes:
            print(f"{steps:>6} (valid but for plan.too_large: {check.errors[0].message[:60]}...)")
        plan = Plan.model_validate(doc)  # the model alone: load_plan refuses plan.too_large
        cases: list[tuple[str, Callable[[], object]]] = [
            ("parse + validate", functools.partial(validate_text, text, filename="p.json")),
            ("validate", functools.partial(validate_document, doc)),
            ("rules only", functools.partial(check_plan, plan)),
            ("boundaries + totals", functools.partial(totals, plan)),
        ]
        cel, distinct = with_expressions(doc)
        check = validate_document(cel)
        assert {e.code for e in check.errors} <= {"plan.too_large"}, check.errors[:5]
        cases += [
            (f"validate + CEL ({distinct}) cold", functools.partial(cold, cel)),
            (f"validate + CEL ({distinct}) warm", functools.partial(validate_document, cel)),
        ]
        for name, fn in cases:
            median, best, cpu = timed(fn, args.repeats)
            print(f"{steps:>6} {name:<28} {median:>10.1f} {best:>8.1f} {cpu:>8.1f}")
    command, interpreter = command_wall(args.repeats)
    print(
        f"\nponder plan validate (one step), whole command: median {command.wall:.3f} s wall "
        f"(best {command.best:.3f} s, median CPU {command.cpu:.3f} s; python -c pass "
        f"{interpreter.wall:.3f} s), load {os.getloadavg()[0]:.1f}"
    )


ONE_STEP = (
    "schema: ponder-plan/1\nname: one\nsteps:\n"
    "  - {id: a, kind: agent, prompt: Hi., model: 'sim:default'}\n"
)


@dataclass(frozen=True)
class Runs:
    wall: float
    """Median wall seconds."""
    best: float
    cpu: float
    """Median user + system seconds (steadier than wall on a shared, loaded machine)."""


def command_wall(repeats: int) -> tuple[Runs, Runs]:
    """``ponder plan validate`` of a one-step plan, and ``python -c pass``, each run
    ``repeats`` times in a fresh home."""
    with tempfile.TemporaryDirectory(prefix="ponder-bench-") as tmp:
        plan = Path(tmp) / "one.yaml"
        plan.write_text(ONE_STEP)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PONDER_", "TEMPORAL_"))}
        env["PONDER_HOME"] = str(Path(tmp) / "home")
        validate = [sys.executable, "-m", "client", "plan", "validate", str(plan)]

        def run(argv: list[str]) -> tuple[float, float]:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run(argv, env=env, capture_output=True, check=True)
            wall = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

        def runs(argv: list[str]) -> Runs:
            walls, cpus = zip(*(run(argv) for _ in range(repeats)), strict=True)
            return Runs(statistics.median(walls), min(walls), statistics.median(cpus))

        return runs(validate), runs([sys.executable, "-c", "pass"])


if __name__ == "__main__":
    main()
