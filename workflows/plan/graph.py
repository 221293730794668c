"""The step graph rules of a plan: ids, deps, fan-out chain membership, reference visibility.

Pure. ``StepGraph`` indexes the steps (a step that failed to parse is None; its id, when
readable, still counts) and reports: duplicate ids; deps that are unknown, repeated, pointing
later or closing a cycle (reported on the forward edge, so the check is linear); chain members
whose deps leave their chain; steps outside a chain that depend on a member; references that
name an unknown step, one that has not run yet, or a member outside its chain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from workflows.plan.boundaries import AnyStep
from workflows.plan.errors import PlanError, join_path
from workflows.plan.model import FanoutStep
from workflows.plan.refs import Ref, RefError, parse_template

__all__ = ["StepGraph"]


class StepGraph:
    """Ids, deps, chain membership and reference visibility, with the errors they raise."""

    def __init__(
        self,
        steps: Sequence[AnyStep | None],
        ids: Sequence[str | None],
        contracts: Mapping[str, Mapping[str, str]],
        max_rounds: int | None,
    ) -> None:
        self.steps = steps
        self.ids = ids
        self.contracts = contracts
        self.max_rounds = max_rounds
        self.errors: list[PlanError] = []
        self.index: dict[str, int] = {}
        for i, step_id in enumerate(ids):
            if step_id is not None and step_id not in self.index:
                self.index[step_id] = i
        # member id -> index of the fan-out that owns it (first owner wins; a second is an error)
        self.owner: dict[str, int] = {}
        for i, step in enumerate(steps):
            if isinstance(step, FanoutStep):
                for member in step.fanout.chain:
                    self.owner.setdefault(member, i)

    def error(self, code: str, i: int, *parts: str | int, message: str) -> None:
        self.errors.append(PlanError(code, join_path(f"steps[{i}]", *parts), message))

    # -- ids and deps ---------------------------------------------------------------------

    def ids_unique(self) -> None:
        for i, step_id in enumerate(self.ids):
            if step_id is not None and self.index.get(step_id) != i:
                first = self.index[step_id]
                self.error(
                    "step.id_duplicate",
                    i,
                    "id",
                    message=f"id {step_id!r} is already used by steps[{first}]; "
                    "fix: give each step its own id",
                )

    def deps(self, i: int, step: AnyStep) -> None:
        seen: set[str] = set()
        for k, dep in enumerate(step.deps):
            if dep in seen:
                self.error(
                    "deps.duplicate",
                    i,
                    "deps",
                    k,
                    message=f"dep {dep!r} is listed twice; fix: list it once",
                )
                continue
            seen.add(dep)
            j = self.index.get(dep)
            if j is None:
                self.error(
                    "deps.unknown",
                    i,
                    "deps",
                    k,
                    message=f"dep {dep!r} names no step; fix: use one of the ids above this step",
                )
            elif j == i or (j > i and self._reaches(j, i)):
                # Only a forward dep can close a cycle (deps pointing back cannot reach a later
                # step on their own), so the cycle is reported on the forward edge, in O(n).
                self.error(
                    "deps.cycle",
                    i,
                    "deps",
                    k,
                    message=f"dep {dep!r} closes a cycle back to {step.id!r}; "
                    "fix: deps point to earlier steps only",
                )
            elif j > i:
                self.error(
                    "deps.not_earlier",
                    i,
                    "deps",
                    k,
                    message=f"dep {dep!r} is steps[{j}], after this step; "
                    "fix: move it above or drop the dep (plans run in order)",
                )

    def _reaches(self, start: int, target: int) -> bool:
        """Whether steps[start] depends on steps[target], directly or transitively."""
        stack, seen = [start], {start}
        while stack:
            step = self.steps[stack.pop()]
            for dep in step.deps if step is not None else []:
                j = self.index.get(dep)
                if j == target:
                    return True
                if j is not None and j not in seen:
                    seen.add(j)
                    stack.append(j)
        return False

    def is_ancestor(self, target: int, i: int) -> bool | None:
        """Whether steps[i] depends on steps[target] through deps; None when a step on the way
        failed to parse. Steps before ``target`` cannot lead back to it, so they are skipped."""
        seen: set[int] = set()
        stack = [i]
        while stack:
            step = self.steps[stack.pop()]
            if step is None:
                return None
            for dep in step.deps:
                j = self.index.get(dep)
                if j == target:
                    return True
                if j is not None and j > target and j not in seen:
                    seen.add(j)
                    stack.append(j)
        return False

    # -- references -----------------------------------------------------------------------

    def visible(self, i: int, target: str) -> tuple[str, str] | None:
        """Why steps[i] cannot read ``target``'s output: (code, message), or None."""
        j = self.index.get(target)
        if j is None:
            return "ref.unknown_step", f"{target!r} names no step; fix: use an earlier step's id"
        target_owner = self.owner.get(target)
        own = self.steps[i]
        own_owner = self.owner.get(own.id) if own is not None else None
        if target_owner is not None:
            chain = self._chain(target_owner)
            same = own_owner == target_owner and own is not None
            if not same or chain.index(target) >= chain.index(own.id if own else ""):
                return "ref.chain_member", (
                    f"{target!r} runs once per item inside fan-out "
                    f"{self.ids[target_owner]!r}; fix: read the fan-out's joined output "
                    f"${{steps.{self.ids[target_owner]}.output}} instead"
                )
            return None
        horizon = own_owner if own_owner is not None else i
        if j >= horizon:
            return "ref.not_earlier", (
                f"{target!r} is steps[{j}], which has not run when this step runs; "
                "fix: reference an earlier step"
            )
        return None

    def _chain(self, fanout_index: int) -> list[str]:
        step = self.steps[fanout_index]
        return list(step.fanout.chain) if isinstance(step, FanoutStep) else []

    def template(self, i: int, text: str, *parts: str | int) -> None:
        try:
            segments = parse_template(text)
        except RefError as exc:
            self.error(
                "ref.syntax",
                i,
                *parts,
                message=f"{exc}; fix: write ${{input.<key>}} or ${{steps.<id>.output}}",
            )
            return
        for segment in segments:
            if isinstance(segment, Ref) and segment.source == "steps":
                problem = self.visible(i, segment.name)
                if problem is not None:
                    code, why = problem
                    self.error(code, i, *parts, message=f"{segment.text()}: {why}")

    # -- per kind ---------------------------------------------------------------------------

    def member(self, i: int, step: AnyStep, owner: int) -> None:
        """A chain member's deps stay in its chain (earlier members) or before the fan-out."""
        chain = self._chain(owner)
        for k, dep in enumerate(step.deps):
            j = self.index.get(dep)
            if j is None:
                continue  # reported by deps()
            inside = dep in chain and chain.index(dep) < chain.index(step.id)
            before = j < owner and dep not in self.owner
            if not (inside or before):
                self.error(
                    "fanout.member_deps",
                    i,
                    "deps",
                    k,
                    message=f"chain member {step.id!r} of fan-out {self.ids[owner]!r} depends on "
                    f"{dep!r}; fix: depend on earlier members of the chain or on steps before "
                    "the fan-out",
                )

    def outsider(self, i: int, step: AnyStep) -> None:
        for k, dep in enumerate(step.deps):
            if dep in self.owner and step.id not in self.owner:
                fan = self.ids[self.owner[dep]]
                self.error(
                    "fanout.member_referenced",
                    i,
                    "deps",
                    k,
                    message=f"{dep!r} runs once per item inside fan-out {fan!r}; "
                    f"fix: depend on {fan!r} (its joined output) instead",
                )
