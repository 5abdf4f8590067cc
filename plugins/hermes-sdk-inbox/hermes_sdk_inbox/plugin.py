"""The entry-point plugin: the inbox as every client's approval provider when configured by environment.

Installed, ``hermes-sdk-inbox`` does nothing until ``HERMES_SDK_INBOX_STORE`` names a store URL;
then clients built without ``approval_provider=`` ask the inbox (``HERMES_SDK_INBOX_WAIT``: the
seconds a synchronous call waits, default 0; ``HERMES_SDK_INBOX_URL``: where operators answer).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Optional

from hermes_sdk import hookimpl

from .provider import InboxProvider

_providers: dict[tuple[str, float, Optional[str]], InboxProvider] = {}
_lock = threading.Lock()


def _configured() -> Optional[InboxProvider]:
    url = os.environ.get("HERMES_SDK_INBOX_STORE")
    if not url:
        return None
    wait = float(os.environ.get("HERMES_SDK_INBOX_WAIT") or 0)
    where = os.environ.get("HERMES_SDK_INBOX_URL") or None
    with _lock:
        provider = _providers.get((url, wait, where))
        if provider is None:
            provider = _providers[(url, wait, where)] = InboxProvider(url, wait=wait, inbox_url=where)
        return provider


class InboxPlugin:
    """Registered under the ``hermes_sdk`` entry-point group as ``hermes-sdk-inbox``.

    It implements only the provider hook: an installed but unconfigured inbox must cost nothing,
    and a stream observer would make every stream's events redacted for it. Entries made this way
    show a run's description (Hermes sets it to the pattern key) instead of the observed pattern
    key; pass the provider as a plugin (``HermesClient(plugins=[provider])``) to observe it.
    """

    @hookimpl
    def hermes_approval_provider(self, client: Any) -> Optional[InboxProvider]:
        return _configured()
