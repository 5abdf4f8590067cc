"""What ``HermesClient(...)`` resolves before its first call: endpoints, the store, retry settings."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Iterable, Optional, Union

from ._constants import DEFAULT_ENDPOINT_ID
from .endpoints import Endpoint
from .errors import InvalidInputError
from .idempotency import IdempotencyStore
from .plugins import call_pipeline
from .redaction import Redactor

if TYPE_CHECKING:
    from .deadline import Timeout
    from .executor import Executor


def max_attempts_value(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError("max_attempts must be a positive integer", details={"field": "max_attempts"})
    return value


def build_endpoints(base_url: Optional[str], api_key: Optional[str], endpoint_id: Optional[str],
                     tenant_id: Optional[str], endpoints: Iterable[Endpoint]) -> dict[str, Endpoint]:
    out: dict[str, Endpoint] = {}
    for ep in endpoints:
        if not isinstance(ep, Endpoint):
            raise InvalidInputError("endpoints must be Endpoint objects", details={"field": "endpoints"})
        if ep.id in out:
            raise InvalidInputError(f"duplicate endpoint id {ep.id!r}", details={"field": "endpoints"})
        out[ep.id] = ep
    base_url = base_url if base_url is not None else (os.environ.get("HERMES_BASE_URL") if not out else None)
    if base_url is not None or not out:
        ep = Endpoint(
            id=endpoint_id or os.environ.get("HERMES_ENDPOINT_ID") or DEFAULT_ENDPOINT_ID,
            base_url=base_url,  # type: ignore[arg-type]
            api_key=api_key if api_key is not None else os.environ.get("HERMES_API_KEY"),
            tenant_id=tenant_id,
        )
        if ep.id in out:
            raise InvalidInputError(f"duplicate endpoint id {ep.id!r}", details={"field": "endpoint_id"})
        out[ep.id] = ep
    return out


def resolve_store(pm: Any, client: Any, value: Union[IdempotencyStore, str, None]) -> IdempotencyStore:
    """A store object as given, or the one a plugin (the built-ins included) makes for a URL."""
    if value is None:
        value = os.environ.get("HERMES_SDK_IDEMPOTENCY_STORE") or "memory:"
    if isinstance(value, str):
        store = call_pipeline(pm, "hermes_idempotency_store", url=value, client=client)
        if store is None:
            raise InvalidInputError(f"no plugin claims the idempotency store URL scheme of {value.split(':')[0]!r}",
                                    details={"field": "idempotency_store"})
        return store  # type: ignore[no-any-return]
    for method in ("reserve", "complete", "get", "get_by_action", "forget"):
        if not callable(getattr(value, method, None)):
            raise InvalidInputError(f"idempotency_store lacks {method}()", details={"field": "idempotency_store"})
    return value


class ClientSettings:
    """The settings a client was built with, read back (mixed into :class:`~hermes_sdk.HermesClient`)."""

    _executor: "Executor"

    @property
    def endpoints(self) -> tuple[Endpoint, ...]:
        """The configured endpoints."""
        return tuple(self._executor.endpoints.values())

    @property
    def idempotency_store(self) -> IdempotencyStore:
        """The idempotency store every keyed call of this client uses."""
        return self._executor.runtime.store

    @property
    def plugin_manager(self) -> Any:
        """This client's pluggy ``PluginManager``."""
        return self._executor.runtime.pm

    @property
    def redactor(self) -> Redactor:
        """The redactor applied to everything logged, traced or shown to an approver."""
        return self._executor.runtime.redactor

    @property
    def strict_idempotency(self) -> bool:
        """Whether a key reused with a different input is refused."""
        return self._executor.runtime.strict_idempotency

    @property
    def key_retention(self) -> float:
        """Seconds a keyed model call's record is kept."""
        return self._executor.runtime.key_retention

    @property
    def max_attempts(self) -> int:
        """Attempts of a retry-safe call."""
        return self._executor.runtime.retry.max_attempts

    @property
    def timeout(self) -> Optional[Timeout]:
        """The default time limits of every call (None: each capability's published timeout)."""
        return self._executor.runtime.timeout

    @property
    def allow_permanent_approvals(self) -> bool:
        """Whether the run approval choice ``always`` may be sent."""
        return self._executor.runtime.allow_permanent_approvals
