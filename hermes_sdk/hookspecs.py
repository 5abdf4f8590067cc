"""Every hook of hermes-sdk. Hook names start with ``hermes_``; the SDK always calls them by keyword.

Plugin authors mark implementations with ``hermes_sdk.hookimpl`` and publish them under the
``hermes_sdk`` entry-point group (or pass them as ``HermesClient(plugins=[...])``).

* "Provide one thing" hooks are first-result: the first non-None answer wins.
* ``hermes_call`` and ``hermes_http_attempt`` are around-hooks: implement them with
  ``@hookimpl(wrapper=True)`` as a generator that yields once (tracing, timing, metrics).
* What every hook receives and gets back is a sealed, read-only view: redacted attributes, header
  values replaced unless allowlisted, no body, no credential, no raw input, no transport object.
  The SDK never reads a decision back from a view (``executed`` is told, not trusted), and the
  innermost step of an around-hook runs once, however often a wrapper asks.
* Observer hooks (``hermes_stream_event``, ``hermes_call_result``) must not raise; if one does, the
  failure is logged and the next observer runs. pluggy calls them in its order (``tryfirst`` first).
  They are plain implementations: a ``wrapper=True`` observer is refused when the plugin is registered.

One word names one thing: a *call* is one use of a capability (``hermes_call``, its ``call``
argument, :class:`~hermes_sdk.plugin.CallView`). The former names still work, with a
DeprecationWarning when the plugin is registered: ``hermes_invocation(invocation)`` is
``hermes_call(call)``, ``hermes_action_result(invocation, result)`` is ``hermes_call_result(call,
result)``, and an ``invocation`` argument is ``call``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence, Union

import pluggy

if TYPE_CHECKING:
    from ._core.approval import ApprovalProvider
    from ._core.exchange import Attempt, HttpReply
    from ._core.families import Family, LazyFamily
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
def hermes_families(client: "ClientView") -> "Optional[Sequence[Union[Family[object], LazyFamily]]]":
    """Return the families (operations and resource) this plugin adds to the client being built:
    each a :class:`~hermes_sdk.plugin.Family`, or a :class:`~hermes_sdk.plugin.LazyFamily` that names
    one and is imported on its first use.

    Every plugin's families are registered, the built-in ones first; an operation or family name
    registered twice is a :class:`~hermes_sdk.PluginError` at construction. A family's resource is
    reached with ``client.resource(ResourceClass)``, its operations with ``invoke()``.
    """


@hookspec
def hermes_redaction_filters(client: "ClientView") -> "Optional[Sequence[FilterFn]]":
    """Return extra text filters ``fn(key, text) -> text``; every plugin's filters are applied."""


@hookspec(firstresult=True)
def hermes_call(call: "CallView") -> "Optional[ActionResult]":
    """Around each call of a capability (after validation, policy and the idempotency check).

    ``call`` is the read-only :class:`~hermes_sdk.plugin.CallView` (no credential, no raw input, no
    runtime: its ``attributes`` and ``headers`` are redacted); the hook returns its
    :class:`~hermes_sdk.ActionResult` (``status="pending"`` for a stream that has just opened).
    Replays from the idempotency record are wrapped too, with ``attributes["replayed"]`` True and
    no HTTP attempt inside. Wrappers see ``call.attributes`` (redacted) and may add their own
    with ``set_attribute``. For streams, ``call.on_stream_settled(callback)`` tells when the
    stream ended. Formerly ``hermes_invocation(invocation)``.
    """


@hookspec(firstresult=True)
def hermes_http_attempt(attempt: "Attempt") -> "Optional[HttpReply]":
    """Around each HTTP attempt; returns the sealed :class:`~hermes_sdk.plugin.HttpReply` (2xx: status,
    allowlisted headers, whether a stream opened) or raises a HermesError.

    ``attempt.attributes`` holds ``method``, ``path`` (the URL template) and ``attempt`` (1-based);
    ``attempt.call`` is the call's view. A wrapper hands back the reply its ``yield`` gave it: the SDK
    reads what it received from its own record, and refuses a reply a wrapper made up.
    """


@hookspec
def hermes_stream_event(call: "CallView", event: dict[str, object]) -> None:
    """Observe each stream event as it arrives (``event`` is redacted: names and numbers only)."""


@hookspec
def hermes_call_result(call: "CallView", result: dict[str, object]) -> None:
    """Observe each call's final result (the redacted ActionResult JSON), executed or replayed.
    Formerly ``hermes_action_result(invocation, result)``."""
