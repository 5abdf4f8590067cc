"""``python -m hermes_sdk.testing``: serve the emulator until interrupted."""

from .emulator import main

raise SystemExit(main())
