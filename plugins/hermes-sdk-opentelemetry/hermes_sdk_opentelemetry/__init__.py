"""OpenTelemetry tracing plugin for hermes-sdk."""

from .plugin import OpenTelemetryPlugin

__all__ = ["OpenTelemetryPlugin"]
