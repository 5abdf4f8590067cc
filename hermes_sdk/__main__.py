"""``python -m hermes_sdk``: the ``hermes-sdk`` command."""

from ._core.cli import main

raise SystemExit(main())
