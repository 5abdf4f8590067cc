"""The cron jobs family (``/api/jobs``): scheduled agent turns, ``client.jobs``.

Its ``hermes-sdk jobs ...`` commands stay in the CLI for now (the application layer attaches them).
"""

from __future__ import annotations

from hermes_sdk.plugin import Family

from .operations import JOB_SPECS
from .resource import Jobs
from .types import Job, JobDeleted

FAMILY: Family[Jobs] = Family("jobs", JOB_SPECS, Jobs)

__all__ = ["FAMILY", "Job", "JobDeleted", "Jobs"]
