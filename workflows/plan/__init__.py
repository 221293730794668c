"""Plans: the ``ponder-plan/1`` model, its validation and the pure interpreter core.

Every module here is pure: no Temporal, httpx or activities import, not even transitively
(tests/plans/test_purity.py checks ``sys.modules`` in a fresh interpreter per module). This
package file imports nothing, so importing one module stays pure. The ``PlanRun`` workflow
(not written yet) is meant to sit on these pieces:

- document, shape, loop_plan, validate: text -> ``model.Plan`` with every error coded
  (``errors``); ``rules.check_plan`` re-checks a plan decoded from workflow input;
- boundaries: the walk's boundaries, worst-case reservations, plan totals and extension caps,
  the revise reset set; ledger: reserve/spend/extend on the shared ``workflows.budget`` model;
  limits: the worst-case history estimate and the concurrency ceiling (``plan.too_large``);
- refs (``${...}`` resolution), prompts (assembly, contract lines, retry feedback, invocation
  ids), gates (verdict grammar, defang), joins (all/any/quorum:N), contracts (output checks),
  paths (containment, with the file system injected), control (resume args, gate decisions),
  reasons (the closed reason enum).
"""

__all__: list[str] = []
