"""OpenTelemetry GenAI and HTTP client conventions for hermes-sdk."""

from .plugin import OpenTelemetryPlugin, metric_views

__all__ = ["OpenTelemetryPlugin", "metric_views"]
