"""``python -m hermes_sdk.plugins``: print the loaded plugins and their hooks as JSON."""

from . import main

raise SystemExit(main())
