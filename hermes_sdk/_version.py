"""The package's one version string: setup.cfg reads it (``attr:``), ``hermes_sdk.__version__`` and
the User-Agent import it. A leaf module, so the core can name it without importing the package."""

__version__ = "0.2.0"
