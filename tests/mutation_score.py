"""The mutation score per module from ``mutmut results --all true`` on stdin (or from
tests/mutation_run.py, which calls ``report``).

A module's score is the share of its mutants that a test killed. A ``timeout`` (mutmut stopped
the tests after many times their usual CPU time) is its own column and is not a kill: it may be
a mutant that loops forever, or one that only made the code slow, and the table should not
claim a test caught it. ``survived``, ``no tests`` (no fast test calls the mutated function)
and the rest (``not checked``, ``suspicious``, ``segfault``, ...) count against the module too.
Prints one Markdown row per module and exits 1 when a module scores under ``--floor`` percent.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping

# "    workflows.budget.xǁBudgetǁblocking_limit__mutmut_1: killed"
NAME = re.compile(r"^\s*(?P<module>[\w.]+?)\.x[_ǁ][^:]*__mutmut_\d+")
LINE = re.compile(NAME.pattern + r": (?P<status>.+?)\s*$")
KILLED = ("killed", "caught by type check")
COLUMNS = ("killed", "timeout", "survived", "no tests")
HEADER = "| module | mutants | killed | timeouts | survived | no tests | other | score |"


def tally(lines: Iterable[str]) -> dict[str, Counter[str]]:
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for line in lines:
        match = LINE.match(line)
        if match:
            status = match["status"]
            module = match["module"].removesuffix(".__init__")  # a package's own mutants
            out[module]["killed" if status in KILLED else status] += 1
    return dict(out)


def score(counts: Counter[str]) -> float:
    total = sum(counts.values())
    return 100.0 * counts["killed"] / total if total else 100.0


def row(name: str, counts: Counter[str]) -> str:
    total = sum(counts.values())
    other = total - sum(counts[c] for c in COLUMNS)
    cells = [str(total), *(str(counts[c]) for c in COLUMNS), str(other), f"{score(counts):.1f}%"]
    return f"| {name} | {' | '.join(cells)} |"


def report(modules: Mapping[str, Counter[str]], *, floor: float) -> int:
    """Prints the table; 1 when a module scores under ``floor``."""
    print(HEADER)
    print("|" + " --- |" * HEADER.count(" | ") + " --- |")
    for module, counts in sorted(modules.items()):
        print(row(f"`{module}`", counts))
    everything: Counter[str] = sum(modules.values(), Counter())
    print(row("all", everything))
    below = [m for m, counts in sorted(modules.items()) if score(counts) < floor]
    if below:
        print(f"under {floor:g}%: {', '.join(below)}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--floor", type=float, default=90.0, help="minimum score per module, %%")
    args = parser.parse_args(argv)
    modules = tally(sys.stdin)
    if not modules:
        print("no mutmut results on stdin", file=sys.stderr)
        return 1
    return report(modules, floor=args.floor)


if __name__ == "__main__":
    raise SystemExit(main())
