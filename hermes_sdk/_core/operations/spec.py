"""OperationSpec: everything the call path knows about one operation, in one value.

A new capability is a new spec in a :class:`~hermes_sdk.plugin.Family`; no stage branches on operation names.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, Callable, Generic, Mapping, Optional, TypeVar, cast
from urllib.parse import quote

import attrs

from ...errors import HermesError
from .. import convert
from .._deprecation import deprecated
from ..aggregate import Accumulator
from ..capabilities import Contract
from ..convert import DecodeContext
from ..streaming import HermesStream
from .common import ProviderRequest, RequestParts, path_id

if TYPE_CHECKING:
    from ..admission import AdmitContext, CompositeContext
    from ..models import ActionResult
    from ..schema import Input

T = TypeVar("T", covariant=True)  # a spec of a subclass is a spec of its base (a Family holds any)

#: Build the request parts from a validated input; raises InvalidInputError before any I/O.
Builder = Callable[[str, Mapping[str, object]], RequestParts]
#: A composite operation's whole lifecycle: ``(ctx) -> ActionResult`` (its endpoint, input, options and calls).
Composite = Callable[["CompositeContext"], "ActionResult"]
#: A local admission rule; its context's ``state`` is the registering family's (any type: the spec
#: does not know its family's state type, the rule does).
Admit = Callable[["AdmitContext[Any]"], None]


@attrs.frozen
class OperationSpec(Generic[T]):
    """One operation: its published contract, request builder, and how its reply becomes ``T``.

    ``decode(json, ctx)`` turns a 2xx JSON body into the typed value, with a
    :class:`~hermes_sdk.plugin.DecodeContext` (the operation, the session id header, the action id,
    ``replayed`` and the reply's headers); a streaming spec has ``stream_class`` instead.
    ``from_record(output, ctx)`` rebuilds the typed value from a durable record's output (``ctx.replayed``
    is True), so a replay returns what the first call returned (``decode`` when not given).
    A decoder written for the former positional protocol ``(json, session_id, action_id, replayed,
    headers=)`` still works this release, with a DeprecationWarning when the spec is built.
    """

    contract: Contract
    build: Builder
    decode: Optional[Callable[[object, DecodeContext], T]] = None
    stream_class: Optional[Callable[..., T]] = None
    #: A streaming spec's accumulator class: how its events fold into text, tools and the final
    #: envelope, and which events end it (one instance per stream).
    accumulator: Callable[[], Accumulator] = Accumulator
    from_record: Optional[Callable[[object, DecodeContext], T]] = None
    #: Non-secret facts of an input for hooks and tracers (``request.model``, ``request.max_tokens``...).
    describe: Optional[Callable[[Mapping[str, object]], dict[str, object]]] = None
    #: A local admission rule run by the policy stage before anything is reserved or sent, given an
    #: :class:`~hermes_sdk.plugin.AdmitContext` (``run_approval`` refuses a stopped run; ``run_stop``
    #: marks the run stopped first).
    admit: Optional[Admit] = None
    #: Refines the typed error of a non-2xx reply with what this operation's codes mean.
    refine_error: Optional[Callable[[HermesError], HermesError]] = None
    #: Keys of this stream's events whose string values its observers may see beyond the
    #: redaction allowlist (``run_events``: the tool name, the pattern key, the approval choice).
    observed_keys: tuple[str, ...] = ()
    #: Hermes serves the route without authentication (``/health``): a client without an API key
    #: may call it (a readiness probe), and one with a key sends it as for any other route.
    public: bool = False
    #: A composite operation (``operator``): several HTTP calls under one capability. ``invoke()``
    #: hands it a :class:`~hermes_sdk.plugin.CompositeContext` (its endpoint, input, options and
    #: typed calls), and it returns the ActionResult.
    composite: Optional[Composite] = None
    #: Whether a 2xx reply is about another object than the one the request named:
    #: ``(input, reply JSON) -> bool``. Such a reply (a delete receipt or a run status naming
    #: another id) is ``invalid_response``, uncertain where the request changed something.
    names_another: Optional[Callable[[Mapping[str, object], object], bool]] = None
    #: Where a 2xx reply names the object it is about, as a dotted path into its JSON (``"id"``,
    #: ``"job.id"``, ``"run_id"``): a reply naming another id than the request's path id is
    #: ``invalid_response``, uncertain where the request changed something. The one declaration of
    #: that rule for every family; None where a reply may rightly name another object (a fork, a
    #: transcript Hermes resolved to the newest child).
    reply_id: Optional[str] = None

    def about_another(self, path_params: Mapping[str, str], input: Mapping[str, object], reply: object) -> bool:
        """Whether a 2xx ``reply`` is about another object than the one the request named."""
        if self.names_another is not None and self.names_another(input, reply):
            return True
        if self.reply_id is None or len(path_params) != 1:
            return False
        named: object = reply
        for part in self.reply_id.split("."):
            named = named.get(part) if isinstance(named, Mapping) else None
        return named is not None and named != next(iter(path_params.values()))
    #: The ``Idempotency-Key`` header sent for the caller's key (``run_start``: a key the server's
    #: rule accepts); the SDK's records keep the caller's key. None: sent unchanged.
    wire_key: Optional[Callable[[str], str]] = None
    #: The ``/v1/capabilities`` feature the server must list for this operation (``run_steer``);
    #: a server without it is refused locally (UnsupportedByServerError), nothing sent.
    server_feature: Optional[str] = None
    #: Input keys (ids, never content) a failure's ``details`` names (``run_approval``: ``request_id``).
    error_input_keys: tuple[str, ...] = ()
    #: The declared input (:class:`~hermes_sdk.plugin.Input`): checked by :meth:`request` before
    #: ``build``, published by ``capabilities()`` as the descriptor's ``input_schema``.
    input: Optional["Input"] = None

    def __attrs_post_init__(self) -> None:
        # A decoder of the former positional protocol is adapted once, here, not per call.
        for name in ("decode", "from_record"):
            given = getattr(self, name)
            if given is not None and _positional(given):
                deprecated(
                    f"OperationSpec({self.contract.operation!r}): a {name} taking (data, session_id, action_id, "
                    "...) is deprecated; take (data, ctx: hermes_sdk.plugin.DecodeContext)", stacklevel=3)
                object.__setattr__(self, name, _adapted(given, name == "from_record"))

    def typed_from_record(self, output: object, session_id: Optional[str], action_id: Optional[str]) -> T:
        """The typed value of a replayed call, from its record (a stream: its class replaying the record)."""
        ctx = DecodeContext(self.name, session_id, action_id, True)
        if self.from_record is not None:
            return self.from_record(output, ctx)
        klass = self.stream_class
        if isinstance(klass, type) and issubclass(klass, HermesStream):
            recorded = convert.stream_result_from_json(convert.json_object(output, "a stream's record"))
            stream = klass.replay(recorded, self.accumulator())
            stream.action_id = ctx.action_id
            return cast(T, stream)  # an instance of stream_class, which makes the T of this spec
        assert self.decode is not None
        return self.decode(output, ctx)

    @property
    def name(self) -> str:
        """The operation name, the last part of its capability id."""
        return self.contract.operation

    @property
    def method(self) -> str:
        """The HTTP method."""
        return self.contract.method

    @property
    def streaming(self) -> bool:
        """Whether the reply is an SSE stream."""
        return self.contract.streaming

    @property
    def timeout(self) -> float:
        """The default wall-clock bound of one call, in seconds: the published ``sla.timeout_ms``."""
        return self.contract.timeout_ms / 1000.0

    def check_input(self, input: object) -> Mapping[str, object]:
        """``input`` if its declared schema accepts it (any input when none is declared: the builder checks)."""
        if self.input is None:
            return input  # type: ignore[return-value]  # the builder refuses what is not a mapping
        return self.input.check(input)

    @property
    def input_schema(self) -> dict[str, object]:
        """The published JSON Schema of the input (any object when none is declared)."""
        from ..schema import input_schema

        return input_schema(self.input)

    def request(self, input: Mapping[str, object]) -> ProviderRequest:
        """Validate ``input`` (its declared schema, in this one place) and map it to the provider request (no I/O)."""
        if self.input is not None:
            input = self.input.check(input)
        parts = self.build(self.name, input)
        # One rule for every path id, whoever built it; each is one segment: a space is %20, '/' is %2F.
        ids = {k: path_id(k, v) for k, v in parts.path_params.items()}
        path = self.contract.path.format(**{k: quote(v, safe="") for k, v in ids.items()})
        if parts.query:
            path += "?" + "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in parts.query)
        return ProviderRequest(self.method, path, parts.headers, parts.body, self.streaming, parts.max_events, ids)


def reply_names_another(input_key: str, reply_key: str) -> Callable[[Mapping[str, object], object], bool]:
    """``names_another`` for a reply whose ``reply_key`` must be the input's ``input_key`` (when given)."""
    def check(input: Mapping[str, object], data: object) -> bool:
        named = data.get(reply_key) if isinstance(data, Mapping) else None
        return named is not None and named != input.get(input_key)
    check.__qualname__ = f"reply_names_another({input_key!r}, {reply_key!r})"
    return check


def _positional(decoder: Callable[..., object]) -> bool:
    """Whether a decoder is of the former protocol: it names ``session_id``/``action_id`` or takes
    more than two positional arguments."""
    try:
        params = list(inspect.signature(decoder).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: taken as the current protocol
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) > 2 or any(p.name in ("session_id", "action_id") for p in params)


def _adapted(legacy: Callable[..., T], record: bool) -> Callable[[object, DecodeContext], T]:
    """A former positional decoder called as ``(data, ctx)``, the way the call path called it before."""
    try:
        params = list(inspect.signature(legacy).parameters.values())
    except (TypeError, ValueError):
        params = []
    takes_headers = any(p.name == "headers" or p.kind is p.VAR_KEYWORD for p in params)

    def decode(data: object, ctx: DecodeContext) -> T:
        if record or ctx.replayed:
            return legacy(data, ctx.session_id, ctx.action_id, True)
        if takes_headers:
            return legacy(data, ctx.session_id, ctx.action_id, headers=ctx.headers)
        return legacy(data, ctx.session_id, ctx.action_id)
    return decode


def check_spec(spec: OperationSpec[object]) -> None:
    """Refuse a spec the call path cannot run (at registration, not at its first call)."""
    if spec.composite is None and spec.streaming != (spec.stream_class is not None):
        raise ValueError("a streaming spec needs stream_class, and only a streaming spec has one")
    if spec.composite is None and not spec.streaming and spec.decode is None:
        raise ValueError("a non-streaming spec needs decode")
