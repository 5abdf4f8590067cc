"""``from hermes_sdk.openai import OpenAI``: openai's client, with hermes-sdk underneath.

A drop-in for ``openai.OpenAI`` against Hermes (``import hermes_sdk.openai as openai`` works too).
openai builds each request and parses each reply (its own types, streams, helpers, resource
classes: mocks and ``isinstance`` checks keep working); hermes-sdk executes each call (one
execution per ``Idempotency-Key``, approvals, a wall-clock deadline, redaction, tracing, plugins),
and a POST that may have reached Hermes is never sent again. See docs/openai.md.

``import hermes_sdk`` never imports openai; this module does, and needs the ``openai`` extra.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Optional, Sequence
from urllib.parse import urlsplit

try:
    import openai as _openai
except ImportError as _missing:  # pragma: no cover - tested in a subprocess without openai
    raise ImportError('hermes_sdk.openai needs the openai package: pip install "hermes-sdk[openai]"',
                      name="openai") from _missing

# openai's own objects under openai's names (``hermes_sdk.openai.APIError is openai.APIError``), so
# that ``except openai.X`` behaves exactly as before: the dual classes raised subclass these.
from openai import (  # noqa: E402  # noqa: E402
    DEFAULT_MAX_RETRIES,
    NOT_GIVEN,
    APIConnectionError,
    APIError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    InternalServerError,
    NotFoundError,
    NotGiven,
    OpenAIError,
    PermissionDeniedError,
    RateLimitError,
    Stream,
    Timeout,
    UnprocessableEntityError,
    types,
)

from hermes_sdk.errors import InvalidInputError

from . import _hooks, _logs, errors
from ._options import call_options
from ._transport import HermesHttpClient, HermesTransport

__all__ = [
    "APIConnectionError", "APIError", "APIStatusError", "APITimeoutError", "AuthenticationError",
    "BadRequestError", "ConflictError", "DEFAULT_MAX_RETRIES", "InternalServerError", "NOT_GIVEN", "NotFoundError",
    "NotGiven", "OpenAI", "OpenAIError", "PermissionDeniedError", "RateLimitError", "Stream", "Timeout",
    "UnprocessableEntityError", "call_options", "errors", "types",
]

_UNSET: Any = object()


def _origin(base_url: str) -> str:
    """Hermes' bare origin from an openai-style base URL (``http://host:8642/v1``)."""
    trimmed = base_url.rstrip("/")
    parts = urlsplit(trimmed)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InvalidInputError(f"base_url must be an http(s) URL such as http://127.0.0.1:8642/v1, not {base_url!r}",
                                details={"field": "base_url"})
    if parts.path == "":
        raise InvalidInputError("base_url must end in /v1, as openai clients write it (http://host:8642/v1): "
                                "openai would call /chat/completions, which Hermes answers 404",
                                details={"field": "base_url"})
    if parts.path != "/v1" or parts.query or parts.fragment:
        raise InvalidInputError(
            f"base_url has a path prefix ({parts.path!r}) before /v1: hermes-sdk talks to a bare Hermes origin, "
            "and dropping the prefix would send traffic elsewhere; point base_url at http(s)://host:port/v1",
            details={"field": "base_url"})
    return f"{parts.scheme}://{parts.netloc}"


class OpenAI(_openai.OpenAI):
    """``openai.OpenAI`` whose only transport is hermes-sdk (see the module docstring and docs/openai.md).

    openai's arguments keep their meaning, except ``http_client`` (refused: pass ``session=``, a
    ``requests.Session``, for proxies and certificates). The keyword-only extras configure the
    :class:`~hermes_sdk.HermesClient` underneath (``client.hermes``), or take an existing one
    (``hermes_client=``); ``deadline`` is a default absolute deadline (or a callable returning
    one); ``client_tools="ignore"`` sends client-declared tools Hermes would ignore instead of
    refusing them.
    """

    hermes_transport: HermesTransport

    def __init__(self, *, api_key: Optional[str] = None, base_url: Any = None, http_client: Any = None,
                 max_retries: int = DEFAULT_MAX_RETRIES, default_headers: Optional[Mapping[str, str]] = None,
                 hermes_client: Any = None, idempotency_store: Any = None, approval_provider: Any = None,
                 context: Any = None, plugins: Sequence[Any] = (), load_entrypoints: bool = True,
                 session: Any = None, deadline: Any = None, client_tools: str = "refuse", **kwargs: Any) -> None:
        if default_headers and any(k.lower() == "idempotency-key" for k in default_headers):
            raise InvalidInputError("default_headers must not hold an Idempotency-Key: one key on every call would "
                                    "replay the first call's result for all of them",
                                    details={"field": "default_headers"})
        if api_key is None:
            api_key = os.environ.get("OPENAI_API_KEY") or os.environ.get("HERMES_API_KEY")
        if base_url is None:
            base_url = os.environ.get("OPENAI_BASE_URL")
            if not base_url and os.environ.get("HERMES_BASE_URL"):
                base_url = os.environ["HERMES_BASE_URL"].rstrip("/") + "/v1"
        if isinstance(http_client, HermesHttpClient):  # copy() / with_options(): share it
            transport = http_client.hermes_transport
        elif http_client is not None:
            raise InvalidInputError("the Hermes facade owns the transport: instead of http_client=, pass session= "
                                    "(a requests.Session) for proxies, verify and client certificates",
                                    details={"field": "http_client"})
        else:
            if base_url is None:
                raise InvalidInputError("no base_url: pass base_url='http://host:8642/v1' or set OPENAI_BASE_URL",
                                        details={"field": "base_url"})
            origin = _origin(str(base_url))
            owns = hermes_client is None
            if hermes_client is None:
                from hermes_sdk import HermesClient

                hermes_client = HermesClient(origin, api_key, idempotency_store=idempotency_store,
                                             approval_provider=approval_provider, context=context, plugins=plugins,
                                             load_entrypoints=load_entrypoints, session=session)
            transport = HermesTransport(hermes_client, owns=owns, client_tools=client_tools, deadline=deadline,
                                        max_retries=max_retries)
            http_client = HermesHttpClient(transport)
        super().__init__(api_key=api_key, base_url=base_url, http_client=http_client, max_retries=max_retries,
                         default_headers=default_headers, **kwargs)
        self.hermes_transport = transport

    @property
    def hermes(self) -> Any:
        """The :class:`~hermes_sdk.HermesClient` underneath: runs, sessions, ``action_result(...)``."""
        return self.hermes_transport.hermes

    # The one private hook (see _hooks): POSTs run without openai's retries, errors as dual classes.
    request = _hooks.request_hook(_openai.OpenAI.request)

    def copy(self, *, deadline: Any = _UNSET, client_tools: Any = _UNSET, **kwargs: Any) -> "OpenAI":
        """openai's ``copy()``/``with_options()``, plus ``deadline=`` and ``client_tools=``; the copy
        shares this client's HermesClient (its store, plugins and connection pool)."""
        changes = {k: v for k, v in (("deadline", deadline), ("client_tools", client_tools)) if v is not _UNSET}
        if changes:
            kwargs["http_client"] = HermesHttpClient(self.hermes_transport.evolve(**changes))
        made: OpenAI = super().copy(**kwargs)
        return made

    with_options = copy


_logs.install()


def __getattr__(name: str) -> Any:
    if name in ("AsyncOpenAI", "AsyncStream", "AsyncAzureOpenAI"):
        raise AttributeError(f"hermes_sdk.openai has no {name}: hermes-sdk is synchronous (use OpenAI, or "
                             "run it in a thread pool)")
    raise AttributeError(f"module 'hermes_sdk.openai' has no attribute {name!r}")
