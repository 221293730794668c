"""The mutation score per module from ``mutmut results --all true`` on stdin (``make mutation``).

A mutant is caught when a test failed (``killed``) or the mutant hung the tests (``timeout``:
an infinite loop is noticed too); ``survived`` and ``no tests`` count against the module. Prints
one table row per module and exits 1 when a module scores under ``--floor`` percent.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable

# "    workflows.budget.xǁBudgetǁblocking_limit__mutmut_1: killed"
LINE = re.compile(r"^\s*(?P<module>[\w.]+?)\.x[_ǁ][^:]*__mutmut_\d+: (?P<status>.+?)\s*$")
CAUGHT = ("killed", "timeout")


def tally(lines: Iterable[str]) -> dict[str, Counter[str]]:
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for line in lines:
        match = LINE.match(line)
        if match:
            out[match["module"]][match["status"]] += 1
    return dict(out)


def score(counts: Counter[str]) -> float:
    total = sum(counts.values())
    return 100.0 * sum(counts[s] for s in CAUGHT) / total if total else 100.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--floor", type=float, default=90.0, help="minimum score per module, %%")
    args = parser.parse_args(argv)
    modules = tally(sys.stdin)
    if not modules:
        print("no mutmut results on stdin", file=sys.stderr)
        return 1
    print("| module | mutants | killed | survived | score |")
    print("| --- | --- | --- | --- | --- |")
    below = []
    for module, counts in sorted(modules.items()):
        caught = sum(counts[s] for s in CAUGHT)
        total = sum(counts.values())
        print(f"| `{module}` | {total} | {caught} | {total - caught} | {score(counts):.1f}% |")
        if score(counts) < args.floor:
            below.append(module)
    everything: Counter[str] = sum(modules.values(), Counter())
    print(f"| all | {sum(everything.values())} | | | {score(everything):.1f}% |")
    if below:
        print(f"under {args.floor:g}%: {', '.join(below)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
