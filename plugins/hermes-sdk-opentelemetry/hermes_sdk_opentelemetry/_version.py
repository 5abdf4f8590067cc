"""This package's one version string (setup.cfg reads it with ``attr:``)."""

__version__ = "0.2.0"
