"""Campaigns: variants x scenarios x seeds, each cell a child workflow, ending in a report.

Pure: ``errors``, ``document`` (the ``ponder-campaign/1`` model), ``matrix`` (cells, run ids,
fingerprint), ``scoring`` (exact, numeric, regex), ``records`` (the run record), ``cells_budget``
(reservation arithmetic) and ``stats`` (the report's statistics; numpy and scipy, run in an
activity only). Temporal side: ``workflow`` (the ``Campaign`` workflow) and ``configs``.
"""
