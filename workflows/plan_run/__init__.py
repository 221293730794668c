"""The ``PlanRun`` workflow: orchestration code that awaits activities.

It lives beside ``workflows.plan`` rather than in it because every module of ``workflows.plan``
is a pure core (the import-linter contract in pyproject.toml), and this code imports Temporal.
"""

__all__: list[str] = []
