"""The campaign activities' registered names; their input and result models are
``workflows.campaign.types``.

The campaign workflow schedules these activities by name and never imports the activity
modules: those load the report's jinja2 and statistics (which pull in numpy) into every process
that imports the workflow, including each ``ponder ask``. The names are in saved histories:
never rename one.

Pure: imports nothing.
"""

from __future__ import annotations

__all__ = ["CHECK_CAMPAIGN_ROUTE", "SETTLE_CAMPAIGN_CELL", "WRITE_CAMPAIGN_ARTIFACTS"]

CHECK_CAMPAIGN_ROUTE = "check_campaign_route"
SETTLE_CAMPAIGN_CELL = "settle_campaign_cell"
WRITE_CAMPAIGN_ARTIFACTS = "write_campaign_artifacts"
