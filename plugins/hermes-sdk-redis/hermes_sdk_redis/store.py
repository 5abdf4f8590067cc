"""A Redis IdempotencyStore: atomic reserve with ``SET NX PX``, TTL from the record, action index.

Safe across threads, processes and hosts: the only step that decides ownership of a key is one
``SET ... NX`` on the Redis server. Every key carries the record's TTL, so Redis itself drops what
has expired (nothing to prune).

The SDK calls this store on a worker thread it stops waiting for at the call's deadline (a frozen
or silent server cannot hold a call). Redis being unreachable is raised as ``ConnectionError``
(``TimeoutError`` for its socket timeout), which the SDK reports as a retryable
``StoreUnavailableError`` with nothing sent.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import time
from typing import Any, Callable, Iterator, Mapping, Optional, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import attrs
import redis

from hermes_sdk.plugin import COMPLETED, CorruptRecordError, IdempotencyRecord, load_record

from .plugin import SCHEMES as SCHEMES
from .plugin import claims

DEFAULT_PREFIX = "hermes_sdk:idem:"
#: Socket timeouts of a client made from a URL that names none: a call the SDK abandoned at its
#: deadline ends within this long, rather than when a frozen server wakes up.
DEFAULT_SOCKET_TIMEOUT = 5.0
DEFAULT_CONNECT_TIMEOUT = 5.0

F = TypeVar("F", bound=Callable[..., Any])


@contextlib.contextmanager
def _outage() -> Iterator[None]:
    """Redis out of reach as the builtin errors every store raises for an outage."""
    try:
        yield
    except redis.TimeoutError as exc:
        raise TimeoutError(f"Redis did not answer in time: {type(exc).__name__}") from exc
    except redis.ConnectionError as exc:  # refused, reset, loading, read-only replica...
        raise ConnectionError(f"Redis is out of reach: {type(exc).__name__}") from exc


def _typed_outage(method: F) -> F:
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with _outage():
            return method(*args, **kwargs)
    return wrapper  # type: ignore[return-value]


def _dumps(record: IdempotencyRecord) -> str:
    return json.dumps(attrs.asdict(record), separators=(",", ":"))


def _loads(raw: Any, name: str, store: "RedisStore") -> IdempotencyRecord:
    """The record stored at ``name``; undecodable, or filed under another key: a CorruptRecordError."""
    record = load_record(raw, "redis")
    if store._rec(record.capability_id, record.key) != name:
        raise CorruptRecordError("an idempotency record in the redis store is filed under another key",
                                 details={"hook": "idempotency_store", "store": "redis", "reason": "corrupt_record"})
    return record


def _ttl_ms(record: IdempotencyRecord, now: float) -> Optional[int]:
    if record.expires_at is None:
        return None
    return max(1, int((record.expires_at - now) * 1000))


class RedisStore:
    """Records live at ``<prefix>rec:<sha256(capability_id, key)>``; ``<prefix>act:<action_id>`` indexes them."""

    def __init__(self, client: "redis.Redis", prefix: str = DEFAULT_PREFIX, owns_client: bool = False) -> None:
        self.redis = client
        self.prefix = prefix
        self._owns = owns_client

    def _rec(self, capability_id: str, key: str) -> str:
        digest = hashlib.sha256(f"{capability_id}\n{key}".encode("utf-8")).hexdigest()
        return f"{self.prefix}rec:{digest}"

    def _act(self, action_id: str) -> str:
        return f"{self.prefix}act:{action_id}"

    @_typed_outage
    def reserve(self, record: IdempotencyRecord) -> Optional[IdempotencyRecord]:
        name = self._rec(record.capability_id, record.key)
        for _ in range(5):
            now = time.time()
            if record.expired(now):
                raise ValueError("record is already expired")
            ttl = _ttl_ms(record, now)
            # The index first: if we lose the race it points at a record with another action id,
            # which get_by_action ignores (and we delete it again below).
            self.redis.set(self._act(record.action_id), name, px=ttl)
            if self.redis.set(name, _dumps(record), nx=True, px=ttl):
                return None
            self.redis.delete(self._act(record.action_id))
            raw = self.redis.get(name)
            if raw is not None:
                return _loads(raw, name, self)
            # The holder expired or was forgotten between our SET and GET: try again.
        raise RuntimeError("could not reserve the idempotency key (contention)")

    @_typed_outage
    def complete(self, capability_id: str, key: str, result: Mapping[str, Any]) -> None:
        name = self._rec(capability_id, key)
        raw = self.redis.get(name)
        if raw is None:
            return
        record = attrs.evolve(_loads(raw, name, self), state=COMPLETED, result=dict(result), completed_at=time.time())
        self.redis.set(name, _dumps(record), xx=True, keepttl=True)

    @_typed_outage
    def get(self, capability_id: str, key: str) -> Optional[IdempotencyRecord]:
        name = self._rec(capability_id, key)
        raw = self.redis.get(name)
        if raw is None:
            return None
        record = _loads(raw, name, self)
        return None if record.expired() else record

    @_typed_outage
    def get_by_action(self, action_id: str) -> Optional[IdempotencyRecord]:
        name = self.redis.get(self._act(action_id))
        if name is None:
            return None
        raw = self.redis.get(name)
        if raw is None:
            return None
        record = _loads(raw, name.decode("utf-8") if isinstance(name, bytes) else str(name), self)
        return record if record.action_id == action_id and not record.expired() else None

    @_typed_outage
    def forget(self, capability_id: str, key: str) -> bool:
        name = self._rec(capability_id, key)
        raw = self.redis.get(name)
        if raw is None:
            return False
        try:
            action_id: Optional[str] = _loads(raw, name, self).action_id
        except CorruptRecordError:
            action_id = None  # a corrupt record can still be cleared; its index entry expires with its TTL
        pipe = self.redis.pipeline()
        pipe.delete(name)
        if action_id is not None:
            pipe.delete(self._act(action_id))
        return bool(pipe.execute()[0])

    def close(self) -> None:
        if self._owns:
            self.redis.close()
            self.redis.connection_pool.disconnect()  # redis-py 4.x's close() leaves the pool's sockets open


def store_from_url(url: str) -> Optional[RedisStore]:
    """A store for ``redis://`` / ``rediss://`` URLs (``?prefix=`` namespaces the keys), else None."""
    if not claims(url):
        return None
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    prefix = next((v for k, v in query if k == "prefix"), DEFAULT_PREFIX)
    rest = urlencode([(k, v) for k, v in query if k != "prefix"])
    options: dict[str, Any] = {}
    names = {k for k, _ in query}
    if "socket_timeout" not in names:
        options["socket_timeout"] = DEFAULT_SOCKET_TIMEOUT
    if "socket_connect_timeout" not in names:
        options["socket_connect_timeout"] = DEFAULT_CONNECT_TIMEOUT
    client = redis.Redis.from_url(urlunsplit(parts._replace(query=rest)), **options)
    return RedisStore(client, prefix=prefix, owns_client=True)
