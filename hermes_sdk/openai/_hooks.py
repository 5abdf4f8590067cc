"""Every private openai hook the facade uses, in one place (tests/openai_facade/test_facade_hooks.py checks each
one on every openai release of the tox matrix, so a release that moves one fails there first).

The facade needs exactly one: ``SyncAPIClient.request(cast_to, options, ...)``, the method every
resource call goes through once (retries happen inside it). Overriding it lets the facade

1. run a POST with openai's own retry loop switched off (``options.max_retries = 0``): openai
   re-sends POSTs after timeouts, lost connections and 5xx, which re-runs a Hermes agent turn; the
   transport retries only failures that provably ran nothing, up to the app's ``max_retries``;
2. turn openai's errors into the dual classes (openai's class and hermes-sdk's at once).

``FinalRequestOptions`` (its ``method`` and ``max_retries`` fields) is read and set. Everything
else is public: ``http_client=`` with an httpx transport, ``x-should-retry: false`` on every POST
reply, ``copy()``/``with_options()``, httpx's API.

Without this hook (a release that renamed it), the transport alone still applies keys,
approvals, deadlines and redaction and refuses openai's re-sends of a POST (they carry
``x-stainless-retry-count``); only the dual classes and the safe-retry budget degrade.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import openai

from hermes_sdk.errors import HermesError

from . import errors as dual
from ._options import retries_for_call

__all__ = ["HOOKS", "check_hooks", "request_hook"]

#: (where, what the facade relies on): the private surface, named.
HOOKS = (
    ("openai.OpenAI.request", "request(self, cast_to, options, *args, **kwargs): every call passes once"),
    ("FinalRequestOptions.method", "the HTTP method of the call, a string"),
    ("FinalRequestOptions.max_retries", "the call's max_retries (NotGiven: the client's), settable"),
)


def request_hook(base: Callable[..., Any]) -> Callable[..., Any]:
    """The facade's ``request``: ``base`` is openai's, unchanged for GETs (openai retries them)."""

    def request(self: Any, cast_to: Any, options: Any, *args: Any, **kwargs: Any) -> Any:
        app_retries = None
        if str(options.method).lower() != "get":
            given = options.max_retries
            app_retries = self.max_retries if isinstance(given, openai.NotGiven) or given is None else int(given)
            # openai's resource methods build these options for this one call (and openai copies
            # them before its loop), so they are set in place: a pydantic copy per call costs more.
            options.max_retries = 0
        try:
            with retries_for_call(app_retries):
                return base(self, cast_to, options, *args, **kwargs)
        except openai.APIError as exc:
            converted = as_dual(exc)
            if converted is exc:
                raise
            raise converted from converted.__cause__

    request.__doc__ = base.__doc__
    return request


def as_dual(exc: openai.APIError) -> openai.APIError:
    """openai's error for a call the transport answered, as the dual class (or ``exc`` itself)."""
    if isinstance(exc, HermesError):
        return exc
    cause = exc.__cause__
    if isinstance(cause, HermesError) and isinstance(cause, openai.APIError):
        return cause  # the transport's own dual error, wrapped by an openai that wraps every exception
    hermes = getattr(cause, "hermes", None)
    if isinstance(hermes, HermesError):
        return dual.from_hermes(hermes, exc.request)  # a GET openai gave up on
    if isinstance(exc, openai.APIStatusError):
        found = exc.response.extensions.get("hermes_error")
        if isinstance(found, HermesError):
            return dual.from_openai_status(exc, found)
    return exc


def check_hooks() -> list[str]:
    """What is wrong with the private hooks in the installed openai (empty: all in place)."""
    problems = []
    request = getattr(openai.OpenAI, "request", None)
    if request is None:
        problems.append("openai.OpenAI.request is gone")
    else:
        params = list(inspect.signature(request).parameters)
        if params[:3] != ["self", "cast_to", "options"]:
            problems.append(f"openai.OpenAI.request takes {params}, not (self, cast_to, options, ...)")
    try:
        from openai._models import FinalRequestOptions
    except ImportError:
        problems.append("openai._models.FinalRequestOptions is gone")
    else:
        fields = getattr(FinalRequestOptions, "model_fields", None) or getattr(FinalRequestOptions, "__fields__", {})
        for name in ("method", "max_retries"):
            if name not in fields:
                problems.append(f"FinalRequestOptions has no field {name!r}")
    return problems
