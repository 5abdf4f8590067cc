"""Every hook of hermes-sdk. Hook names start with ``hermes_``; the SDK always calls them by keyword.

Plugin authors mark implementations with ``hermes_sdk.hookimpl`` and publish them under the
``hermes_sdk`` entry-point group (or pass them as ``HermesClient(plugins=[...])``).

* "Provide one thing" hooks are first-result: the first non-None answer wins.
* ``hermes_invocation`` and ``hermes_http_attempt`` are around-hooks: implement them with
  ``@hookimpl(wrapper=True)`` as a generator that yields once (tracing, timing, metrics).
  The objects they receive carry only redacted attributes.
* Observer hooks (``hermes_stream_event``, ``hermes_action_result``) must not raise; if one does, the
  failure is logged and the call goes on. They are plain implementations: a ``wrapper=True``
  observer is refused when the plugin is registered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

import pluggy

if TYPE_CHECKING:
    from ._core.approval import ApprovalProvider
    from ._core.exchange import Attempt, HttpReply
    from ._core.families import Family
    from ._core.idempotency import IdempotencyStore
    from ._core.models import ActionResult
    from ._core.redaction import FilterFn
    from ._core.view import CallView, ClientView

hookspec = pluggy.HookspecMarker("hermes_sdk")
hookimpl = pluggy.HookimplMarker("hermes_sdk")


@hookspec(firstresult=True)
def hermes_idempotency_store(url: str, client: "ClientView") -> "Optional[IdempotencyStore]":
    """Return a store for ``url`` if this plugin claims its scheme (e.g. ``redis://``), else None.

    ``client`` is a :class:`~hermes_sdk.plugin.ClientView` of the client being built (endpoint
    ids and origins; no key). Built in: ``memory:`` and ``sqlite:///path``.
    """


@hookspec(firstresult=True)
def hermes_approval_provider(client: "ClientView") -> "Optional[ApprovalProvider]":
    """Return the approval provider (callable or ``request_approval`` object).

    It answers every approval-gated call (``response_delete``, ...) *and* the agent's shell commands
    in runs (``request.operation == "run_approval"``): branch on ``request.operation``. Used when the
    client was not given ``approval_provider=``. Built in: none (deny by default).
    """


@hookspec
def hermes_families(client: "ClientView") -> "Optional[Sequence[Family[Any]]]":
    """Return the families (operations and resource) this plugin adds to the client being built.

    Every plugin's families are registered, the built-in ones first; an operation or family name
    registered twice is a :class:`~hermes_sdk.PluginError` at construction. A family's resource is
    reached with ``client.resource(ResourceClass)``, its operations with ``invoke()``.
    """


@hookspec
def hermes_redaction_filters(client: "ClientView") -> "Optional[Sequence[FilterFn]]":
    """Return extra text filters ``fn(key, text) -> text``; every plugin's filters are applied."""


@hookspec(firstresult=True)
def hermes_invocation(invocation: "CallView") -> "Optional[ActionResult]":
    """Around each capability invocation (after validation, policy and the idempotency check).

    ``invocation`` is the :class:`~hermes_sdk.plugin.CallView` (no credential, no raw input, no
    runtime: its ``attributes`` and ``headers`` are redacted); the hook returns its
    :class:`~hermes_sdk.ActionResult` (``status="pending"`` for a stream that has just opened).
    Replays from the idempotency record are wrapped too, with ``attributes["replayed"]`` True and
    no HTTP attempt inside. Wrappers see ``invocation.attributes`` (redacted) and may add their own
    with ``set_attribute``. For streams, ``invocation.on_stream_settled(callback)`` tells when the
    stream ended.
    """


@hookspec(firstresult=True)
def hermes_http_attempt(attempt: "Attempt") -> "Optional[HttpReply]":
    """Around each HTTP attempt; returns the :class:`~hermes_sdk.plugin.HttpReply` (2xx) or raises a HermesError.

    ``attempt.attributes`` holds ``method``, ``path`` (the URL template) and ``attempt`` (1-based).
    """


@hookspec
def hermes_stream_event(invocation: "CallView", event: dict[str, Any]) -> None:
    """Observe each stream event as it arrives (``event`` is redacted: names and numbers only)."""


@hookspec
def hermes_action_result(invocation: "CallView", result: dict[str, Any]) -> None:
    """Observe each final action result (redacted), executed or replayed."""
