"""Plans: the ``ponder-plan/1`` model, its validation and the pure interpreter core.

Every module here is pure: no Temporal, httpx or activities import, not even transitively
(tests/plans/test_purity.py checks ``sys.modules`` in a fresh interpreter per module). This
package file imports nothing, so importing one module stays pure. The ``PlanRun`` workflow
(``workflows.plan_run``, whose package docstring maps its own modules) applies these rules;
``ponder plan validate`` and the workflow's own input decoding run the same validation.

Validation, in passes, every error coded (``errors``) with a path and a fix:
parse (``document``) -> translate another form (``loop_plan``, ``stratum``) -> shape (``shape``,
``flow_shape``, ``model``) -> rules (``rules``) -> limits (``limits``) -> boundaries and their
worst cases (``boundaries``); ``validate`` runs them in that order.

The modules, one line each (tests/plans/test_package_map.py checks the list is complete):

The document and its validation
- ``validate``: the pipeline above, from text or a parsed document to a ``model.Plan``.
- ``document``: plan text (JSON or YAML) to a JSON value, closed to what JSON can say.
- ``model``: the ``ponder-plan/1`` pydantic model; ``schema``: its shipped JSON Schema.
- ``shape``, ``flow_shape``: closed-world keys per step kind, then the model, step by step
  (the top level, then each flow's body).
- ``rules``, ``graph``: the cross-field rules (ids, deps, references, routes, budgets) over the
  steps that parsed; ``graph`` indexes the step graph they walk.
- ``limits``: the worst-case history estimate and the widest region (``plan.too_large``).
- ``feature_rules``: the consumer, checkpoint and worktree rules, apart from those features'
  run-time models (which validating a plan does not need).
- ``boundaries``: the walk's boundaries and their worst-case reservations, plan totals and
  extension caps.
- ``errors``: ``PlanError`` and the stable codes; ``run_notes``: what ``validate`` notes of a
  valid plan; ``note_codes``: the codes those notes start with.

Other forms, translated onto ``ponder-plan/1`` (raw dict to raw dict, then validated as one)
- ``loop_plan``: a ``loop-plan/1`` document (the reference's camelCase form).
- ``stratum``, ``stratum_expr``: a stratum flow document, and its expressions rewritten as CEL.

CEL (``set`` values, ``ensure[].expr``, ``iterate.until``, ``when``)
- ``expressions``: the grammar check, bounds and names; ``expression_lexing``: what text must
  pass, in linear time, before any parser sees it; ``expression_parser``: the parser (lark) and
  the walk over its trees, loaded by the first expression analysed.
- ``expression_rules``: the rules for each CEL site (names it binds, steps it may read).
- ``predicates``: what an expression is evaluated over, and what the model is told after a
  failed check; ``check_types``: the ``evaluate_cel`` and ``probe_files`` activity models.

The run's rules (what ``workflows.plan_run`` decides with)
- ``activation``: whether a boundary runs, is skipped or is stranded; which steps may overlap.
- ``ledger``, ``ledgers``: the run's budget ledger (reserve, spend, extend within the cap) and
  the nested ones (a step's, a fan-out's, a sub-flow's).
- ``preflight``: the start refusals in their fixed order; ``routing``: which executor runs a
  step and its model family.
- ``refs``, ``prompts``: ``${...}`` resolution, and prompt assembly with contract lines and
  retry feedback.
- ``dispatch_rules``, ``call_costs``: one dispatch's prompt, request, failure classes and
  retry prompts; what a model call spends and settles in each ledger.
- ``gates``, ``joins``, ``contracts``: the verdict grammar and defang, the ``all`` | ``any`` |
  ``quorum:N`` joins, output contracts.
- ``paths``: artifact path containment, the file system injected.
- ``control``, ``deadlines``: resume arguments and gate decisions, and a gate's deadline and
  escalation schedule.
- ``flows``: sub-flows' scoped ids, ``with`` inputs and outputs.
- ``consumer``, ``checkpoints``, ``worktrees``, ``training``: consumer issuances and
  ``step_done``; checkpoint snapshots and fingerprints; worktree fan-out names, ceilings and
  landing; training-pair records.
- ``reasons``: the closed enum of run failure reasons.

What a run records and exchanges
- ``run_record``: the trace, step states and cost; ``run_files``: ``graph.json``,
  ``calls.jsonl`` and the other data files; ``status``: the status query's answer.
- ``run_types``: the workflow's input, result, control and query models;
  ``activity_contracts``: the plan activities' names and the failure codes the workflow reads.
"""

__all__: list[str] = []
