"""A test kit for third-party plugins: pytest base classes a plugin's test module subclasses.

As SQLAlchemy ships ``sqlalchemy.testing.suite`` for third-party dialects, this ships what every
idempotency store, approval provider and redaction filter must do::

    from hermes_sdk.testing.contracts import IdempotencyStoreContract

    class TestMyStore(IdempotencyStoreContract):
        def make_store(self):
            return MyStore()

pytest collects the ``test_*`` methods the subclass inherits. Each class documents the hooks a
subclass may give (how to build a store in another process, how to write a corrupt record, how a
person answers an approval). This package needs pytest (the rest of hermes-sdk does not): import it
from tests only.
"""

from __future__ import annotations

from ._approval import ApprovalProviderContract
from ._redaction import RedactionFilterContract
from ._store import IdempotencyStoreContract

__all__ = ["ApprovalProviderContract", "IdempotencyStoreContract", "RedactionFilterContract"]
