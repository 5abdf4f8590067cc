"""What plugin authors use: the hook marker, the objects hooks receive, and the store protocol.

Applications import from :mod:`hermes_sdk`; plugins (stores, approval providers, redaction
filters, tracers) import from here. Every hook is documented in :mod:`hermes_sdk.hookspecs`.
"""

from __future__ import annotations

from .call import Call
from .capabilities import CONTRACTS, Contract, descriptor
from .exchange import Attempt, HttpReply
from .hookspecs import hookimpl, hookspec
from .idempotency import COMPLETED, PENDING, IdempotencyRecord, IdempotencyStore, store_from_url
from .models import ActionResult
from .operations import OperationSpec, ProviderRequest, RequestParts, register, unregister
from .redaction import Redactor
from .runtime import Runtime

#: The hook object's former name, an alias of :class:`Call`.
Invocation = Call

__all__ = [
    "ActionResult", "Attempt", "COMPLETED", "CONTRACTS", "Call", "Contract", "HttpReply", "IdempotencyRecord",
    "IdempotencyStore", "Invocation", "OperationSpec", "PENDING", "ProviderRequest", "Redactor", "RequestParts",
    "Runtime", "descriptor", "hookimpl", "hookspec", "register", "store_from_url", "unregister",
]
