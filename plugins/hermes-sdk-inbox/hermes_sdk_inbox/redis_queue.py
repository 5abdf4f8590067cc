"""The approval queue on Redis (``pip install hermes-sdk-inbox[redis]``).

``<prefix>e:<id>`` holds an entry's JSON, ``<prefix>open:<open_key>`` the id of the entry holding
that key (taken with ``SET NX``), and the sorted set ``<prefix>index`` every id by request time.
``update`` is a compare-and-set under ``WATCH``.
"""

from __future__ import annotations

from typing import Any, Optional
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis

from .queue import _dump, _load, holds_identifier

DEFAULT_PREFIX = "hermes_sdk:inbox:"


class RedisQueue:
    """A queue on a ``redis.Redis`` client (``owns_client``: close it with the queue)."""

    def __init__(self, client: "redis.Redis", prefix: str = DEFAULT_PREFIX, owns_client: bool = False) -> None:
        self.redis = client
        self.prefix = prefix
        self._owns = owns_client

    @classmethod
    def from_url(cls, url: str) -> "RedisQueue":
        """``redis://host:port/db?prefix=app:inbox:`` (``rediss://`` for TLS)."""
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        prefix = next((v for k, v in query if k == "prefix"), DEFAULT_PREFIX)
        rest = urlencode([(k, v) for k, v in query if k != "prefix"])
        return cls(redis.Redis.from_url(urlunsplit(parts._replace(query=rest))), prefix=prefix, owns_client=True)

    def _e(self, entry_id: str) -> str:
        return f"{self.prefix}e:{entry_id}"

    def _o(self, open_key: str) -> str:
        return f"{self.prefix}open:{open_key}"

    def add(self, entry: dict[str, Any]) -> dict[str, Any]:
        key = entry.get("open_key")
        for _ in range(5):
            if key is None or self.redis.set(self._o(key), entry["id"], nx=True):
                pipe = self.redis.pipeline()
                pipe.set(self._e(entry["id"]), _dump(entry))
                pipe.zadd(f"{self.prefix}index", {entry["id"]: float(entry["requested_at"])})
                pipe.execute()
                return dict(entry)
            holder = self.redis.get(self._o(key))
            if holder is not None:
                found = self.get(holder.decode() if isinstance(holder, bytes) else holder)
                if found is not None:
                    return found
        raise RuntimeError("could not add the approval queue entry (contention)")

    def get(self, entry_id: str) -> Optional[dict[str, Any]]:
        raw = self.redis.get(self._e(entry_id))
        return None if raw is None else _load(raw, entry_id)

    def update(self, entry: dict[str, Any], version: int) -> bool:
        name = self._e(entry["id"])
        new_key = entry.get("open_key")
        with self.redis.pipeline() as pipe:
            try:
                watched = [name] + ([self._o(new_key)] if new_key else [])
                pipe.watch(*watched)
                raw = pipe.get(name)
                if raw is None:
                    return False
                old = _load(raw, entry["id"])
                if old.get("version") != version:
                    return False
                if new_key:
                    holder = pipe.get(self._o(new_key))
                    if holder is not None and (holder.decode() if isinstance(holder, bytes) else holder) != entry["id"]:
                        return False
                pipe.multi()
                old_key = old.get("open_key")
                if old_key and old_key != new_key:
                    pipe.delete(self._o(old_key))
                if new_key:
                    pipe.set(self._o(new_key), entry["id"])
                pipe.set(name, _dump(entry))
                pipe.execute()
                return True
            except redis.WatchError:
                return False

    def list(self, *, state: Optional[str] = None, limit: int = 100, offset: int = 0,
             identifier: Optional[str] = None) -> list[dict[str, Any]]:
        """Newest first, read through the whole index when the filters need it (Redis has no query)."""
        out: list[dict[str, Any]] = []
        start = 0
        skipped = 0
        while len(out) < limit:
            ids = self.redis.zrevrange(f"{self.prefix}index", start, start + 199)
            if not ids:
                break
            start += len(ids)
            names = [i.decode() if isinstance(i, bytes) else i for i in ids]
            for eid, raw in zip(names, self.redis.mget([self._e(n) for n in names])):
                if raw is None:
                    continue
                doc = _load(raw, eid)
                if state is not None and doc.get("state") != state:
                    continue
                if identifier is not None and not holds_identifier(doc, identifier):
                    continue
                if skipped < offset:
                    skipped += 1
                    continue
                out.append(doc)
                if len(out) >= limit:
                    break
        return out

    def close(self) -> None:
        if self._owns:
            self.redis.close()


__all__ = ["RedisQueue"]
