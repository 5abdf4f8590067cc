"""OpenTelemetry GenAI and HTTP client conventions for hermes-sdk."""

from ._version import __version__ as __version__
from .plugin import OpenTelemetryPlugin, metric_views

__all__ = ["OpenTelemetryPlugin", "metric_views"]
