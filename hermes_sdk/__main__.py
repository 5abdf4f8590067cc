"""``python -m hermes_sdk``: the ``hermes-sdk`` command."""

from .cli import main

raise SystemExit(main())
