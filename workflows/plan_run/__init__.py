"""The ``PlanRun`` workflow: orchestration code that awaits activities.

It lives beside ``workflows.plan`` rather than in it because every module of ``workflows.plan``
is a pure core (the import-linter contract in pyproject.toml), and this code imports Temporal.
The modules are free functions around one ``state.PlanRunState`` (the run's record, ledgers,
outputs and message handlers), passed as ``run``; the rules they apply are the pure modules of
``workflows.plan``.

The life of a run: ``state`` decodes the input and validates the plan in ``@workflow.init``,
before any message is handled, and ``workflow`` fails a bad input, plan or argument before the
run opens (a run ``--from`` a checkpoint also reads that checkpoint first).
``preflight`` applies its refusals in a fixed order and opens the run's ledger and the
``dispatch.Dispatcher``. ``walk`` then visits the boundaries in plan order (``overlap`` instead,
for independent steps, when the plan's ``concurrency`` is above 1). At each boundary ``routes``
says whether it runs, is skipped or is stranded; a pause, a human gate or a set step runs
without a reservation; a ``run`` step walks its flow's body inline (``subflows``); anything else
reserves its worst case in every ledger that covers it, waiting for ``extend_budget`` when the
run's cannot hold it (``waits``), then runs: an agent step or a model gate through ``dispatch``
(one invocation per attempt, started in batches by ``pacing``), a fan-out through ``regions``,
a tournament through ``child``. Once it settles, its routes arm their targets or send the walk
back, and a top-level step is fingerprinted and maybe committed (``checkpoints``); a revert
accepted during any wait restores a snapshot and the walk goes on from there. Every wait for a
person writes the run files so far (``finish.write_trace``). ``finish`` ends the run:
completed, failed with its reason, or cancelled, with its trace, cost and last status written
to the run directory.

The modules, one line each (tests/plans/test_package_map.py checks the list is complete):

The walk
- ``workflow``: the ``PlanRun`` definition: input checks, preflight, walk, and how each ending
  becomes a result or a typed failure.
- ``state``: ``PlanRunState``, what the handlers read and change, with the ``resume``,
  ``resolve_gate`` and ``extend_budget`` updates (and their signal forms) and the status and
  events queries.
- ``preflight``: the start refusals in their fixed order, then the run's ledger and dispatcher.
- ``walk``: boundaries in plan order (or overlapping), activation, and the jumps routes make.
- ``boundary_run``: one boundary as the plan-order walk runs it: the switch on its kind, its
  reservation, an agent step's ``on_fail``.
- ``overlap``: the concurrent walk of a scope (the top level, a sub-flow's body): independent
  steps in flight together under one shared reservation.
- ``scope``: where a boundary runs (the top level or a sub-flow's body): what ``${input...}``
  names and where outputs go.
- ``pacing``: how many invocations, and how much prompt text, one workflow task may start.

Dispatch of each step kind
- ``dispatch``: one invocation of an agent step or a model gate: spend, snapshot, call, landed
  barrier, contract, retries (what it decides with is ``workflows.plan.dispatch_rules``, what
  it books ``workflows.plan.call_costs``).
- ``checks``: ``ensure`` predicates (CEL, file probes, judged) and ``iterate.until``.
- ``iterate``: an ``iterate`` step's attempt cycles, repeated until ``until`` holds.
- ``set_steps``: ``kind: set``: CEL values in one local activity, no reservation.
- ``child``: a ``tournament`` step as a child ``Tournament`` workflow, capped by its reservation.

Routes and activation
- ``routes``: whether a boundary runs, is skipped or is stranded; the routes a gate decision
  arms; a step's ``when``.

Budgets and ledgers: no module of their own here. The arithmetic is ``workflows.plan.ledger``
(the run's) and ``workflows.plan.ledgers`` (a step's, a fan-out's, a sub-flow's);
``boundary_run.reserve_worst_case`` reserves, the ``dispatch.Dispatcher`` spends,
``overlap.Overlap`` holds the reservation steps in flight share, and ``waits`` keeps a
person's time off the wall clock.

Pauses, gates and waits
- ``pauses``: a pause step waits ``awaiting_input`` for its resume argument.
- ``gates``: model gates (verdict, redos, fail routes) and human gates (approve, revise, kill).
- ``deadlines``: a human gate's deadline and escalation timers, and the escalation post.
- ``waits``: every wait for a person (a pause, a gate, a budget), counted apart from agent time.

Checkpoints
- ``checkpoints``: fingerprints, commits, reverts, and restoring steps ``--from RUN:LABEL``.
- ``checkpoint_control``: the ``checkpoint`` and ``revert`` updates and their signal forms.

Consumer steps
- ``consumer``: issue an attempt to an external executor and wait for its answer.
- ``consumer_control``: the ``step_done`` update and its signal form, the ``issuance`` query.

Regions and fan-outs
- ``regions``: a fan-out's items, their chains ``concurrency`` at a time, and the join.
- ``worktrees``: a fan-out with ``isolation: worktree``: a git worktree per item, its patch, the
  merge and the landing.

Sub-flows
- ``subflows``: a ``run`` step walks its flow's body inline, in its own scope and ledger.

Capture, run files and finish
- ``capture``: a training pair at each successful settle of an agent step, for plans that opt in.
- ``finish``: the run's end (``run.closed``: completed, failed or cancelled) and its run files
  (``trace.jsonl``, ``calls.jsonl``, ``cost.json``, ``graph.json``, the report; at the end
  ``progress.json`` and ``checkpoints.json``), written at each wait for a person and at the
  end; the trace and call rows go whole once, then only what is new
  (``workflows.plan.run_files`` builds the data files).
"""

__all__: list[str] = []
