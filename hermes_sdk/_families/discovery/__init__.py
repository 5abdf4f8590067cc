"""The discovery family: what the server is and offers (``/health``, ``/v1/models``,
``/v1/capabilities``, ``/v1/toolsets``, ``/health/detailed``, ``/v1/skills``, ``/api/model/options``).

Two registered families, so ``capabilities()`` keeps the order published since 0.1: ``discovery``
after the runs family and ``server`` (the server facts) after the jobs family.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._shared import lazy_exports
from .resource import DiscoveryMethods

if TYPE_CHECKING:
    from hermes_sdk.plugin import Family

    from .types import Health, ModelInfo, ServerCapabilities, Skill, Toolset

    FAMILY: Family[None]
    SERVER_FAMILY: Family[None]

# The client mixes DiscoveryMethods in; the rest is imported when first asked for.
__getattr__ = lazy_exports(__name__, {"FAMILY": ".operations", "SERVER_FAMILY": ".operations", "Health": ".types",
                                      "ModelInfo": ".types", "ServerCapabilities": ".types", "Skill": ".types",
                                      "Toolset": ".types"})

__all__ = ["DiscoveryMethods", "FAMILY", "Health", "ModelInfo", "SERVER_FAMILY", "ServerCapabilities", "Skill",
           "Toolset"]
