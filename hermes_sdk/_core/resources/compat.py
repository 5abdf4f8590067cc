"""The client's former flat methods, kept for one release as deprecated aliases of the resources."""

from __future__ import annotations

import functools
import warnings
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from ..families import legacy_resources

F = TypeVar("F", bound=Callable[..., Any])


def _moved(new: str) -> Callable[[F], F]:
    def wrap(method: F) -> F:
        @functools.wraps(method)
        def alias(self: Any, *args: Any, **kwargs: Any) -> Any:
            warnings.warn(f"HermesClient.{method.__name__}() is deprecated: use client.{new}()",
                          DeprecationWarning, stacklevel=2)
            return method(self, *args, **kwargs)
        alias.__doc__ = f"Deprecated alias of ``client.{new}()``."
        return alias  # type: ignore[return-value]
    return wrap


class DeprecatedAliases:
    """``run_get``, ``run_stop``, ``run_approval``, ``run_approval_request`` and the recovery tools."""

    runs: Any
    records: Any
    _executor: Any

    if not TYPE_CHECKING:  # resources registered process-wide (deprecated); type checkers see no such attributes
        def __getattr__(self, name: str) -> Any:
            factory = legacy_resources().get(name)
            if factory is None or name.startswith("_"):
                raise AttributeError(f"'HermesClient' object has no attribute {name!r}")
            extra = self.__dict__.setdefault("_extra", {})
            if name not in extra:
                extra[name] = factory(self._executor)
            return extra[name]

    @_moved("runs.get")
    def run_get(self, run_id: str, **kwargs: Any) -> Any:
        return self.runs.get(run_id, **kwargs)

    @_moved("runs.stop")
    def run_stop(self, run_id: str, **kwargs: Any) -> Any:
        return self.runs.stop(run_id, **kwargs)

    @_moved("runs.approve")
    def run_approval(self, run_id: str, choice: str, **kwargs: Any) -> Any:
        return self.runs.approve(run_id, choice, **kwargs)

    @_moved("runs.approval_request")
    def run_approval_request(self, run_id: str, command: str, **kwargs: Any) -> Any:
        return self.runs.approval_request(run_id, command, **kwargs)

    @_moved("records.get")
    def idempotency_record(self, capability_id: str, key: str) -> Any:
        return self.records.get(capability_id, key)

    @_moved("records.resolve_pending")
    def resolve_pending(self, capability_id: str, key: str, **kwargs: Any) -> Any:
        return self.records.resolve_pending(capability_id, key, **kwargs)

    @_moved("records.forget")
    def forget_idempotency_key(self, capability_id: str, key: str) -> Any:
        return self.records.forget(capability_id, key)
