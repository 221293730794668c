"""The campaign activities' registered names, in a module that imports nothing.

The campaign workflow schedules these activities by name; importing the names from the
activity modules would load what the activities need (the report's jinja2 and statistics, which
pull in numpy) into every process that imports the workflow, including each ``ponder ask``.
"""

from __future__ import annotations

__all__ = ["CHECK_CAMPAIGN_ROUTE", "SETTLE_CAMPAIGN_CELL", "WRITE_CAMPAIGN_ARTIFACTS"]

CHECK_CAMPAIGN_ROUTE = "check_campaign_route"
SETTLE_CAMPAIGN_CELL = "settle_campaign_cell"
WRITE_CAMPAIGN_ARTIFACTS = "write_campaign_artifacts"
