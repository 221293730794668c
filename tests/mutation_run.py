"""Mutation testing of the pure cores: mutmut over the chosen modules, scored per module.

    python -m tests.mutation_run                          # every pure core (make mutation)
    python -m tests.mutation_run workflows/plan/joins.py  # some modules
    python -m tests.mutation_run --changed HEAD~1 --sample 60   # what a commit touched (CI)

The pure cores are the modules of the "pure cores" import-linter contract in pyproject.toml,
so a module added there is mutated too. mutmut reads its settings from ``pyproject.toml`` in
the directory it runs in: this script runs it in ``build/mutation/<key>/`` (one directory per
set of modules, kept so a rerun reuses mutmut's test timings and results), whose
``pyproject.toml`` is the checkout's with ``only_mutate`` added to ``[tool.mutmut]``, and whose
sources are links to the checkout's. mutmut's output goes to ``--log``; the table
(tests/mutation_score.py) goes to stdout and the exit status is 1 when a module scores under
``--floor``.

``--sample N`` checks about N mutants in all, the same ones for the same code (ordered by a hash
of their names), split evenly over the modules (at least ``MIN_PER_MODULE`` each), so a check
fits a time budget; the output says it was a sample.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tomllib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from tests.mutation_score import NAME, report, tally

ROOT = Path(__file__).resolve().parent.parent
MIN_PER_MODULE = 5
CONTRACT = "pure cores import no Temporal, HTTP or activities, even transitively"

# Runs inside the mutmut venv, in the work directory: mutmut's own first step (copy the sources
# to mutants/ and write each module's mutants), so the names are known before any test runs.
GENERATE = """
from mutmut.__main__ import create_mutants
from mutmut.utils.file_utils import copy_src_dir
import os
os.makedirs("mutants", exist_ok=True)
copy_src_dir()
create_mutants(1)
"""


def pure_cores(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """The contract's modules as files under the checkout (``a.b.**``: every file under a/b)."""
    contracts = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["name"] == CONTRACT]
    root = pyproject.parent
    files: set[str] = set()
    for module in contract["source_modules"]:
        base = module.removesuffix(".**").replace(".", "/")
        if module.endswith(".**"):
            files.update(p.relative_to(root).as_posix() for p in (root / base).rglob("*.py"))
        elif (root / base).is_dir():
            files.add(f"{base}/__init__.py")
        else:
            files.add(f"{base}.py")
    return sorted(files)


def changed(paths: Iterable[str], cores: Sequence[str]) -> list[str]:
    """The pure cores among ``paths`` (a ``git diff --name-only``), in the cores' order."""
    touched = set(paths)
    return [f for f in cores if f in touched]


def module_name(path: str) -> str:
    """``workflows/plan/__init__.py`` -> ``workflows.plan``, as mutmut names mutants."""
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def sample(names: Iterable[str], per_module: int) -> list[str]:
    """At most ``per_module`` names of each module: the same ones whatever order they come in,
    and mostly the same after an edit elsewhere in the module (a name's hash is its own)."""
    by_module: dict[str, list[str]] = defaultdict(list)
    for name in names:
        match = NAME.match(name)
        by_module[match["module"] if match else ""].append(name)
    chosen: list[str] = []
    for group in by_module.values():
        group.sort(key=lambda n: hashlib.sha256(n.encode()).hexdigest())
        chosen.extend(group[:per_module])
    return sorted(chosen)


def work_dir(modules: Sequence[str], base: Path) -> Path:
    key = hashlib.sha256("\n".join(sorted(modules)).encode()).hexdigest()[:12]
    return base / key


def prepare(work: Path, modules: Sequence[str]) -> None:
    """The work directory: links to the sources and tests, and the checkout's pyproject.toml
    with ``only_mutate`` set to ``modules`` (mutmut takes no module list on its command line)."""
    work.mkdir(parents=True, exist_ok=True)
    text = (ROOT / "pyproject.toml").read_text()
    settings = tomllib.loads(text)["tool"]["mutmut"]
    for name in [*settings["source_paths"], *settings["also_copy"], "tests"]:
        link = work / name
        if not link.is_symlink():
            link.symlink_to(ROOT / name)
    header = "[tool.mutmut]\n"
    assert text.count(header) == 1, "pyproject.toml has one [tool.mutmut] table"
    only = f"only_mutate = {json.dumps(list(modules))}\n"
    (work / "pyproject.toml").write_text(text.replace(header, header + only))


def mutant_names(work: Path, modules: Sequence[str]) -> list[str]:
    """Every mutant of ``modules``, from the ``.meta`` files mutmut writes beside them."""
    names: list[str] = []
    for path in modules:
        meta = work / "mutants" / f"{path}.meta"
        if meta.exists():
            names.extend(json.loads(meta.read_text())["exit_code_by_key"])
    return names


def run(argv: Sequence[str], *, cwd: Path, log: Path) -> int:
    with log.open("a") as out:
        out.write(f"\n$ {' '.join(argv)}\n")
        out.flush()
        return subprocess.run(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="module files (default: every pure core)")
    parser.add_argument("--changed", metavar="REF", help="the pure cores changed since REF")
    parser.add_argument("--sample", type=int, default=0, help="about N mutants in all")
    parser.add_argument("--floor", type=float, default=90.0, help="minimum score per module, %%")
    parser.add_argument("--max-children", type=int, default=1)
    parser.add_argument("--mutmut", type=Path, default=ROOT / ".venv-mut/bin/mutmut")
    parser.add_argument("--log", type=Path, default=ROOT / "build/mutation.log")
    parser.add_argument("--work", type=Path, default=ROOT / "build/mutation")
    args = parser.parse_args(argv)

    cores = pure_cores()
    if args.changed:
        diff = subprocess.run(
            ["git", "diff", "--name-only", args.changed, "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        if diff.returncode != 0:  # a first commit, or a clone too shallow to hold REF
            reason = (diff.stderr.strip().splitlines() or ["failed"])[0]
            print(f"mutation check skipped: git diff {args.changed}: {reason}")
            return 0
        modules = changed(diff.stdout.split(), cores)
        if not modules:
            print(f"mutation check skipped: no pure core changed since {args.changed}")
            return 0
    else:
        unknown = [m for m in args.modules if m not in cores]
        if unknown:
            print(f"not a pure core: {', '.join(unknown)} (see {CONTRACT!r})", file=sys.stderr)
            return 2
        modules = list(args.modules) or cores

    work = work_dir(modules, args.work)
    prepare(work, modules)
    args.log.parent.mkdir(parents=True, exist_ok=True)
    print(f"mutating {len(modules)} module(s) in {work}; mutmut's output: {args.log}")
    mutmut = str(args.mutmut.resolve())
    names: list[str] = []
    if args.sample:
        python = str(args.mutmut.resolve().parent / "python")
        if run([python, "-c", GENERATE], cwd=work, log=args.log) != 0:
            print(f"mutant generation failed; see {args.log}", file=sys.stderr)
            return 1
        everything = mutant_names(work, modules)
        per_module = max(MIN_PER_MODULE, args.sample // len(modules))
        names = sample(everything, per_module)
        print(f"a sample: {len(names)} of {len(everything)} mutants, {per_module} a module at most")
    command = [mutmut, "run", "--max-children", str(args.max_children), *names]
    status = run(command, cwd=work, log=args.log)
    if status != 0:  # the tests failed without a mutant, or mutmut itself did
        print(f"mutmut run failed (status {status}); see {args.log}", file=sys.stderr)
        return 1
    results = subprocess.run(
        [mutmut, "results", "--all", "true"], cwd=work, capture_output=True, text=True
    )
    lines = results.stdout.splitlines()
    if names:  # only the sample: the other mutants' results may be old ones
        chosen = set(names)
        lines = [line for line in lines if line.split(":")[0].strip() in chosen]
    wanted = {module_name(m) for m in modules}
    counts = {m: c for m, c in tally(lines).items() if m in wanted}
    if not counts:
        print(f"no mutmut results; see {args.log}", file=sys.stderr)
        return 1
    status = report(counts, floor=args.floor)
    unmutated = sorted(wanted - set(counts))
    if unmutated:  # declarations only (types, constants, names): nothing to mutate
        print(f"no mutants: {', '.join(unmutated)}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
