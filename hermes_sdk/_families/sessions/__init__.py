"""The sessions family (``/api/sessions``): addressable, persistent sessions, ``client.sessions``.

Its ``hermes-sdk sessions ...`` commands stay in the CLI for now (the application layer attaches them).
"""

from __future__ import annotations

from hermes_sdk.plugin import Family

from .operations import SPECS
from .resource import Sessions

FAMILY: Family[Sessions] = Family("sessions", SPECS, Sessions)

__all__ = ["FAMILY", "Sessions"]
