"""Compressed bodies Hermes was not asked for, decoded by the SDK itself with a bound on the output.

The SDK asks for ``Accept-Encoding: identity``. A server or proxy that compresses anyway gets its
gzip or deflate body decoded here, never by urllib3: before 2.6, urllib3's decoders inflate a whole
read at once, so a 250 KiB gzip bomb became 256 MiB in one call. Here each ``decompress`` call is
given ``max_length`` (zlib's own bound on what one call returns), so memory holds what the caller
asked for plus one network read, on every urllib3 release. Any other coding (br, zstd, compress,
a stack of codings) is refused: the SDK cannot read it, and it did not ask for it.
"""

from __future__ import annotations

import zlib
from typing import Iterator, Mapping, Optional

from ..errors import InvalidResponseError

#: What the SDK asks for: the body as it is (nothing for urllib3 to inflate).
ACCEPT_ENCODING = "identity"

_GZIP_WBITS = 16 + zlib.MAX_WBITS
_CODINGS = {"gzip": _GZIP_WBITS, "x-gzip": _GZIP_WBITS, "deflate": zlib.MAX_WBITS}


def coding_of(headers: Mapping[str, str], *, uncertain: bool = False) -> Optional[str]:
    """The one content coding a reply's ``Content-Encoding`` names (``gzip``, ``x-gzip``, ``deflate``),
    or None for an identity body; anything else is ``invalid_response``."""
    value = headers.get("Content-Encoding")
    if value is None:
        return None
    codings = [part.strip().lower() for part in str(value).split(",")]
    codings = [part for part in codings if part not in ("", "identity")]
    if not codings:
        return None
    if len(codings) == 1 and codings[0] in _CODINGS:
        return codings[0]
    raise InvalidResponseError(
        f"Hermes' reply is encoded as {str(value)[:64]!r}, which the SDK did not ask for (it sends "
        "Accept-Encoding: identity) and cannot decode (gzip and deflate only)",
        uncertain_outcome=uncertain,
        details={"reason": "unsupported_content_encoding", "content_encoding": str(value)[:64]})


class Inflater:
    """A gzip (any number of members) or deflate (zlib-wrapped or raw) decoder whose every call
    returns at most ``room`` bytes; input it could not decode yet is kept for the next call."""

    def __init__(self, coding: str, *, uncertain: bool = False) -> None:
        self._wbits = _CODINGS[coding]
        self._gzip = self._wbits == _GZIP_WBITS
        self._uncertain = uncertain
        self._decoder = zlib.decompressobj(self._wbits)
        self._tail = b""  # input not decoded yet (the last call's room was used up)
        self._full = False  # the last call filled its room: zlib may hold more output
        self._head: Optional[bytes] = b""  # deflate: input until the zlib header is known good
        self.ended = False  # the compressed stream's (or the last gzip member's) end was seen
        self._done = False

    @property
    def pending(self) -> bool:
        """Whether a call without new input may return more output."""
        return bool(self._tail) or self._full

    def feed(self, data: bytes, room: int) -> bytes:
        """Decode ``data`` (after what was kept), returning at most ``room`` bytes."""
        if self._tail:
            data, self._tail = self._tail + data, b""
        out: list[bytes] = []
        size = 0
        while size < room and not self._done:
            if self.ended:  # between gzip members: zero padding, or the next member
                data = data.lstrip(b"\0")
                if not data:
                    break
                self._decoder, self.ended = zlib.decompressobj(self._wbits), False
            elif not (data or self._full):
                break
            piece = self._decompress(data, room - size)
            self._full = len(piece) == room - size  # zlib may hold more output than it returned
            out.append(piece)
            size += len(piece)
            if self._decoder.eof:
                data, self.ended, self._full = self._decoder.unused_data, True, False
                if not self._gzip:  # deflate has one stream; what follows it is ignored
                    data, self._done = b"", True
            else:
                data = self._decoder.unconsumed_tail
                if not piece and not data:
                    break  # all input taken: more is needed
        self._tail = data
        return b"".join(out)

    def _decompress(self, data: bytes, room: int) -> bytes:
        head = self._head
        try:
            piece: bytes = self._decoder.decompress(data, room)
        except zlib.error as exc:
            if head is not None and not self._gzip and self._wbits > 0:
                # Some servers send raw deflate for "deflate" (RFC 9110 says zlib): try that once.
                self._wbits, self._head = -zlib.MAX_WBITS, None
                self._decoder = zlib.decompressobj(self._wbits)
                return self._decompress(head + data, room)
            raise InvalidResponseError(f"Hermes' compressed reply is corrupt ({exc})",
                                       uncertain_outcome=self._uncertain,
                                       details={"reason": "corrupt_content_encoding"}) from None
        if head is not None:
            head += data
            self._head = head if len(head) < 2 and not self._gzip else None  # zlib's header is 2 bytes
        return piece


def inflate_chunks(source: Iterator[bytes], coding: str, piece: int) -> Iterator[bytes]:
    """A compressed byte stream's decoded bytes, at most ``piece`` bytes at a time (a stream's own
    limits then bound the total)."""
    inflater = Inflater(coding, uncertain=True)
    for data in source:
        out = inflater.feed(data, piece)
        if out:
            yield out
        while inflater.pending:
            out = inflater.feed(b"", piece)
            if not out:
                break
            yield out


__all__ = ["ACCEPT_ENCODING", "Inflater", "coding_of", "inflate_chunks"]
