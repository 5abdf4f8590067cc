"""Stage 1, policy: tenant binding, credential, key requirement and deadline; then the headers.

Every header value is known and validated here, before an idempotency key is reserved, so a
value that cannot be sent never burns a key.
"""

from __future__ import annotations

import time

from ...errors import DeadlineExceededError, InvalidInputError, TenantMismatchError
from .._plugin_manager import outsiders
from ..admission import AdmitContext, RecordsView
from ..call import Call
from ..view import redacted_headers, show_headers


def check(call: Call) -> None:
    """Refuse a call the endpoint's policy does not admit; fill ``call.headers``."""
    ep, contract, ctx = call.endpoint, call.contract, call.context
    if ep.tenant_id is not None:
        actual = ctx.tenant_id if ctx is not None else None
        if actual != ep.tenant_id:
            raise TenantMismatchError(f"endpoint {ep.id!r} belongs to another tenant",
                                      details={"endpoint_id": ep.id, "actual_tenant": actual or "none"})
    api_key = ep.api_key if call.spec.public else ep.require_key()
    if call.spec.admit is not None:
        rt = call.runtime
        call.spec.admit(AdmitContext(
            operation=call.operation, endpoint_id=ep.id, base_url=ep.base_url, input=call.input,
            state=rt.registry.state_of(call.operation), records=RecordsView(rt.store),
            allow_permanent_approvals=rt.allow_permanent_approvals))
    if contract.key_requirement == "required" and call.key is None:
        raise InvalidInputError(f"{contract.operation} requires an idempotency key: pass idempotency_key=",
                                details={"field": "idempotency_key"})
    if call.deadline is not None and time.time() >= call.deadline:
        raise DeadlineExceededError("the deadline passed before the call was sent",
                                    details={"operation": contract.operation, "sent": False})
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    if ctx is not None:
        headers.update(ctx.headers(call.deadline))
    elif call.deadline is not None:
        headers["X-AIP-Deadline-Unix-Ms"] = str(int(call.deadline * 1000))
    headers.update(call.request.headers)
    if call.key is not None:
        # The caller's key wins, the same on every attempt (a spec may map it to the server's rule).
        wire_key = call.spec.wire_key
        headers["Idempotency-Key"] = wire_key(call.key) if wire_key is not None else call.key
    headers["Accept"] = "text/event-stream" if call.spec.streaming else "application/json"
    call.runtime.transport.check_session_headers()
    call.headers = headers
    if outsiders(call.runtime.pm):  # someone besides the built-ins may read them
        show_headers(call.view, redacted_headers(headers, call.runtime.redactor.text))
