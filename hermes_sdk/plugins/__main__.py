"""``python -m hermes_sdk.plugins`` (deprecated: ``hermes-sdk plugins``): print the loaded plugins as JSON."""

from .._core._plugin_manager import main

raise SystemExit(main())
