"""The exceptions a read of Hermes' bytes can raise, whoever raises them.

requests and urllib3 wrap most wire failures in their own classes, but not all: http.client and
urllib3 raise ``ValueError`` for a negative chunk size (``read length must be non-negative``),
``int()`` does for a ``Content-Length`` of ``²`` (``str.isdigit()`` says yes), and parsers of
broken framing raise ``IndexError``, ``OverflowError`` or ``http.client.HTTPException``. Every read
of the wire catches this whole class and types it (``invalid_response`` or a transport error),
so none of them surfaces as a plugin failure. ``HermesError`` is caught first where it can occur
(``InvalidInputError`` is a ``ValueError``).
"""

from __future__ import annotations

import http.client
import re
from typing import Optional

import requests
import urllib3.exceptions

#: Failures of the wire itself: the transport's own classes.
TRANSPORT_FAULTS = (requests.RequestException, OSError, urllib3.exceptions.HTTPError)
#: Bytes no HTTP/1.1 parser accepts, raised as whatever the parser raises.
FRAMING_FAULTS = (ValueError, LookupError, ArithmeticError, EOFError, http.client.HTTPException)
#: Anything a read of the wire can raise.
WIRE_FAULTS = TRANSPORT_FAULTS + FRAMING_FAULTS

_DIGITS = re.compile(r"[0-9]{1,18}")


def content_length(value: Optional[str]) -> Optional[int]:
    """A ``Content-Length`` as RFC 9110 spells it (ASCII digits only), else None: ``²`` and ``٣`` are
    digits to ``str.isdigit()`` and not to HTTP."""
    if value is None or not _DIGITS.fullmatch(value.strip()):
        return None
    return int(value.strip())


__all__ = ["FRAMING_FAULTS", "TRANSPORT_FAULTS", "WIRE_FAULTS", "content_length"]
