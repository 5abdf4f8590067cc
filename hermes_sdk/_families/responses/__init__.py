"""The Responses family (``/v1/responses``): ``client.responses()``, ``responses_stream()``,
``response_get()`` and ``response_delete()``, whose bodies are the :class:`Responses` resource's
(``client.resource(Responses)``)."""

from __future__ import annotations

from hermes_sdk.plugin import Family

from .operations import SPECS
from .resource import Responses
from .types import DeletionReceipt, HermesResponse, ResponseStream

FAMILY: Family[Responses] = Family("responses", SPECS, Responses)

__all__ = ["FAMILY", "DeletionReceipt", "HermesResponse", "ResponseStream", "Responses"]
