"""The discovery family: what the server is and offers (``/health``, ``/v1/models``,
``/v1/capabilities``, ``/v1/toolsets``, ``/health/detailed``, ``/v1/skills``, ``/api/model/options``).

Two registered families, so ``capabilities()`` keeps the order published since 0.1: ``discovery``
after the runs family and ``server`` (the server facts) after the jobs family.
"""

from __future__ import annotations

from hermes_sdk.plugin import Family

from .operations import DISCOVERY_SPECS, SERVER_SPECS
from .resource import DiscoveryMethods
from .types import Health, ModelInfo, ServerCapabilities, Skill, Toolset

FAMILY: Family[None] = Family("discovery", DISCOVERY_SPECS)
SERVER_FAMILY: Family[None] = Family("server", SERVER_SPECS)

__all__ = ["DiscoveryMethods", "FAMILY", "Health", "ModelInfo", "SERVER_FAMILY", "ServerCapabilities", "Skill",
           "Toolset"]
