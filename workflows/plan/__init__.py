"""Plans: the ``ponder-plan/1`` model, its validation and the pure interpreter core.

Every module here except the (later) workflow is pure: no Temporal, httpx or activities import,
not even transitively (tests/plans/test_purity.py checks ``sys.modules`` in a fresh interpreter).
This package file imports nothing so that importing one pure module stays pure.
"""

__all__: list[str] = []
