"""The plugin: one class, registered under the ``hermes_sdk`` entry-point group as ``hermes-demo``."""

from __future__ import annotations

import re
import threading
import time
from collections import deque
from typing import Any, Optional

from hermes_sdk import MemoryStore, hookimpl

SPANS: "deque[dict[str, Any]]" = deque(maxlen=1000)
_STORES: dict[str, "DemoStore"] = {}
_STORES_LOCK = threading.Lock()
_SECRET = re.compile(r"demo-secret-\d+")


class DemoStore(MemoryStore):
    """A named in-process store: every client asking for ``demo://NAME`` shares one."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


class DemoPlugin:
    @hookimpl
    def hermes_idempotency_store(self, url: str, client: Any) -> Optional[DemoStore]:
        if not url.startswith("demo://"):
            return None
        name = url[len("demo://"):]
        with _STORES_LOCK:
            return _STORES.setdefault(name, DemoStore(name))

    @hookimpl
    def hermes_approval_provider(self, client: Any) -> Any:
        def provider(request: Any) -> Any:
            if request.reason and request.reason.startswith("demo-approve:"):
                return request.approve(approver="demo-plugin", policy_decision_id="demo-policy-1")
            return None

        return provider

    @hookimpl
    def hermes_redaction_filters(self, client: Any) -> Any:
        return [lambda key, text: _SECRET.sub("[DEMO-SECRET]", text)]

    @hookimpl(wrapper=True)
    def hermes_call(self, call: Any) -> Any:
        span: dict[str, Any] = {"kind": "call", "attributes": call.attributes, "start": time.time()}
        try:
            result = yield
        except Exception as exc:
            span["error"] = type(exc).__name__
            raise
        finally:
            span["end"] = time.time()
            SPANS.append(span)
        return result

    @hookimpl(wrapper=True)
    def hermes_http_attempt(self, attempt: Any) -> Any:
        span = {"kind": "attempt", "attributes": dict(attempt.attributes)}
        try:
            return (yield)
        finally:
            SPANS.append(span)
