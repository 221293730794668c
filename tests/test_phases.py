"""One set of phase names: ``workflows/phases.py`` defines them; nothing else spells them."""

from __future__ import annotations

import re
from pathlib import Path

from workflows import phases
from workflows.tournament.profiles import Profile, plan

ROOT = Path(__file__).resolve().parent.parent
SPELLED = re.compile(
    r"[\"'](initial_generation|generation_judging|generation_mutation|"
    r"final_judging|finalizing)\b"
)


def test_no_phase_name_spelled_outside_its_module() -> None:
    offenders = []
    for package in ("workflows", "activities", "client", "worker"):
        for path in (ROOT / package).rglob("*.py"):
            if path == ROOT / "workflows" / "phases.py":
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if SPELLED.search(line):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []


def test_the_pattern_would_catch_a_spelled_phase() -> None:
    assert SPELLED.search('phase = f"generation_judging:{g}"')
    assert SPELLED.search("if phase == 'final_judging':")
    assert not SPELLED.search("phases.FINAL_JUDGING")


def test_the_plan_lists_phases_in_schedule_order() -> None:
    planned = [p.phase for p in plan(Profile(n=6, k=2, t=2, m=2), finalizer=True).phases]
    assert planned == [
        phases.INITIAL_GENERATION,
        phases.generation_judging(1),
        phases.generation_mutation(1),
        phases.generation_judging(2),
        phases.generation_mutation(2),
        phases.FINAL_JUDGING,
        phases.FINALIZING,
    ]
    assert sorted(reversed(planned), key=phases.order_key) == planned


def test_split_order_and_label() -> None:
    assert phases.split("generation_judging:12") == (phases.GENERATION_JUDGING, 12)
    assert phases.split(phases.FINAL_JUDGING) == (phases.FINAL_JUDGING, None)
    shuffled = ["generation_judging:10", "weird", "generation_judging:2", phases.STARTING]
    assert sorted(shuffled, key=phases.order_key) == [
        "weird",
        phases.STARTING,
        "generation_judging:2",
        "generation_judging:10",
    ]
    assert phases.label("generation_judging:3") == "gen 3"
    assert phases.label(phases.FINAL_JUDGING) == "final"
