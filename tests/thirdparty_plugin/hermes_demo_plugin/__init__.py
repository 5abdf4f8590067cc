"""A third-party hermes-sdk plugin (test fixture package)."""

from .plugin import SPANS, DemoPlugin, DemoStore

__all__ = ["SPANS", "DemoPlugin", "DemoStore"]
