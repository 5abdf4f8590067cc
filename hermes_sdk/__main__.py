"""``python -m hermes_sdk``: the ``hermes-sdk`` command."""

from ._app.cli import main

raise SystemExit(main())
