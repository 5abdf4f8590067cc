"""The entry-point plugin: the inbox as every client's approval provider when configured by environment.

Installed, ``hermes-sdk-inbox`` does nothing until ``HERMES_SDK_INBOX_STORE`` names a store URL;
then clients built without ``approval_provider=`` ask the inbox (``HERMES_SDK_INBOX_WAIT``: the
seconds a synchronous call waits, default 0; ``HERMES_SDK_INBOX_URL``: where operators answer;
``HERMES_SDK_INBOX_APPROVAL_TIMEOUT``: Hermes' ``approvals.timeout`` in seconds, default 60, how long
a run's entry stays open: as long as Hermes waits for the answer).
"""

from __future__ import annotations

import math
import os
import threading
from typing import TYPE_CHECKING, Any, Optional

from hermes_sdk import InvalidInputError, hookimpl

if TYPE_CHECKING:  # imported when configured: an installed inbox nobody configures costs this module only
    from .provider import InboxProvider

#: Hermes' ``approvals.timeout`` (seconds) where the server is set to another than its default 60.
APPROVAL_TIMEOUT_ENV = "HERMES_SDK_INBOX_APPROVAL_TIMEOUT"

_providers: dict[tuple[str, float, Optional[str], float], InboxProvider] = {}
_lock = threading.Lock()


def _approval_timeout() -> float:
    raw = (os.environ.get(APPROVAL_TIMEOUT_ENV) or "").strip()
    if not raw:
        from .provider import HERMES_APPROVAL_TIMEOUT

        return HERMES_APPROVAL_TIMEOUT
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise InvalidInputError(f"{APPROVAL_TIMEOUT_ENV} must be Hermes' approvals.timeout in seconds (a number "
                                f"above 0), not {raw!r}", details={"field": APPROVAL_TIMEOUT_ENV})
    return seconds


def _configured() -> Optional[InboxProvider]:
    url = os.environ.get("HERMES_SDK_INBOX_STORE")
    if not url:
        return None
    wait = float(os.environ.get("HERMES_SDK_INBOX_WAIT") or 0)
    where = os.environ.get("HERMES_SDK_INBOX_URL") or None
    timeout = _approval_timeout()
    from .provider import InboxProvider

    with _lock:
        provider = _providers.get((url, wait, where, timeout))
        if provider is None:
            provider = _providers[(url, wait, where, timeout)] = InboxProvider(
                url, wait=wait, inbox_url=where, approval_timeout=timeout)
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
