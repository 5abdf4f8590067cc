"""HTTP for one endpoint call: prepared once, sent without redirects, every failure typed.

Only requests' and urllib3's public API is used: every attempt goes through ``Session.send`` (so
requests-mock, ``responses`` and a caller's own session or adapters see it), bodies are read with
``HTTPResponse.read`` / ``read_chunked`` / ``read1``, and the socket the deadline watchdog cuts comes
from the SDK's connection classes (``connect()`` and ``request()`` overrides) or from
``HTTPResponse.connection.sock``; no underscored attribute of another library is read or written.
The connection classes are made, per class, from whatever class urllib3's pools use at the time
(``HTTPConnectionPool.ConnectionCls``), so a recorder that patches it (vcrpy) sees the SDK's calls.

Bodies are asked for as ``identity`` and read undecoded: a compressed one is decoded, bounded, by
:mod:`hermes_sdk._inflate` on every urllib3 release (urllib3 < 2.6 inflates a whole read at once).

Per-call work is kept small: proxy and CA settings are resolved once per origin (requests would
re-read the environment on every request), headers are merged from a prepared base, the JSON body
is encoded once by the operation mapper, and the SDK's adapter skips the header copy and cookie
jar requests would build for every response.
"""

from __future__ import annotations

import functools
import http.client
import json
import math
import os
import re
import socket
import sys
import threading
import time
from typing import Any, Iterable, Mapping, MutableMapping, Optional, Protocol, Tuple, Union

import requests
import urllib3
import urllib3.connection
import urllib3.connectionpool
import urllib3.exceptions
from requests.adapters import DEFAULT_POOLBLOCK, DEFAULT_POOLSIZE, BaseAdapter, HTTPAdapter
from requests.structures import CaseInsensitiveDict
from urllib3.util.retry import Retry

from ..errors import (
    DeadlineExceededError,
    HermesError,
    InvalidInputError,
    InvalidResponseError,
    RemoteTemporaryError,
    TransportError,
    status_error_class,
)
from . import _fork
from ._constants import (
    CONNECT_TIMEOUT,
    MAX_ERROR_BODY_BYTES,
    MAX_JSON_RESPONSE_BYTES,
    READ_CHUNK_BYTES,
    RETRY_AFTER_CAP,
    USER_AGENT,
)
from ._inflate import ACCEPT_ENCODING, Inflater, coding_of
from ._wire import FRAMING_FAULTS, WIRE_FAULTS, content_length
from .capabilities import Contract
from .deadline import current_alarm
from .endpoints import Endpoint
from .retry import DEFAULT_POLICY

#: An origin's proxies, CA verification (``verify=``) and client certificate (``cert=``).
_OriginSettings = Tuple[dict[str, str], Union[bool, str, None], Union[str, Tuple[str, str], None]]


class Shutdownable(Protocol):
    """What the deadline watchdog cuts: a socket, or a recorder's stand-in for one."""

    def shutdown(self, how: int, /) -> None: ...


class _NoRedirectSession(requests.Session):
    """Even with ``allow_redirects=False``, ``Session.send`` walks a 3xx's Location to build
    ``Response.next`` and reads the whole (unbounded) body first; the SDK never follows redirects."""

    def get_redirect_target(self, resp: requests.Response) -> Optional[str]:
        return None


class _Watched:
    """Hands the connection's socket to the deadline alarm of the call being sent (new and reused),
    and sends a request's header block and bytes body in one ``sendall`` (http.client sends them
    apart: two system calls, and two TCP segments, per request).

    Mixed into whatever connection class urllib3's pools use (see :func:`_watched_class`): a
    recorder's class (vcrpy's) may open its socket only inside ``getresponse()``, so the alarm also
    gets the connection itself, whose socket it looks up when it fires.

    The socket is handed over when urllib3 assigns ``sock`` (http.client's public attribute), which
    every urllib3 from 1.26 on does as soon as the TCP connection exists: before a proxy's
    ``CONNECT`` reply is read, before the TLS handshake, before any byte of the request.
    """

    _sdk_sock: object = None  # a socket, or a recorder's stand-in for one
    _held: Optional[bytes] = None  # b"": hold the next send (the header block); else what is held
    #: urllib3 1.26 only: http.client's reply, whose ``read1`` reads a close-delimited stream live
    #: (urllib3 1.26's HTTPResponse has no read1; 2.x returns its own reply, which has).
    sdk_reply: Optional[http.client.HTTPResponse] = None

    @property
    def sock(self) -> Any:  # as http.client types it (socket | Any): a recorder's class hands over a stand-in
        theirs = _class_sock(type(self))  # a recorder's class (vcrpy) answers with its real connection's
        return theirs.__get__(self, type(self)) if theirs is not None else self._sdk_sock

    @sock.setter
    def sock(self, value: object) -> None:
        theirs = _class_sock(type(self))
        if theirs is not None and theirs.fset is not None:
            theirs.fset(self, value)
        self._sdk_sock = value
        if value is not None:
            _socket_used.value = True
            alarm = current_alarm()
            if alarm is not None and isinstance(value, socket.socket):  # a recorder's stand-in is not one
                alarm.attach(value)

    def request(self, method: str, url: str, body: object = None, headers: Optional[Mapping[str, object]] = None,
                **kwargs: object) -> None:
        _socket_used.value = True  # a pooled connection's socket: bytes may leave from here on
        self.sdk_reply = None
        alarm = current_alarm()
        if alarm is not None:
            sock = _socket(self)
            alarm.attach(sock if sock is not None else _LateSocket(self))
        if not (isinstance(body, bytes) and body) or kwargs.get("chunked"):
            super().request(method, url, body, headers, **kwargs)  # type: ignore[misc]
            return
        self._held = b""
        try:
            super().request(method, url, body, headers, **kwargs)  # type: ignore[misc]
        finally:
            held, self._held = self._held, None
        if held:  # no body followed the header block (not expected): it still goes out
            self.send(held)

    def send(self, data: object) -> None:
        held = self._held
        if held is not None and isinstance(data, bytes):
            if not held:
                self._held = data
                return
            self._held = None
            data = held + data
        super().send(data)  # type: ignore[misc]

    # Any: urllib3's reply (2.x) or http.client's (1.26), the two bases' getresponse() disagree.
    def getresponse(self, *args: object, **kwargs: object) -> Any:
        reply = super().getresponse(*args, **kwargs)  # type: ignore[misc]
        if isinstance(reply, http.client.HTTPResponse):
            self.sdk_reply = reply
        return reply


_CLASS_SOCK: dict[type, Optional[property]] = {}


def _class_sock(klass: type) -> Optional[property]:
    """The ``sock`` property of the class _Watched was mixed into (vcrpy's has one), if any."""
    try:
        return _CLASS_SOCK[klass]
    except KeyError:
        found = _CLASS_SOCK[klass] = _find_class_sock(klass)
        return found


def _find_class_sock(klass: type) -> Optional[property]:
    mro = klass.__mro__
    for base in mro[mro.index(_Watched) + 1:]:
        found = base.__dict__.get("sock")
        if found is not None:
            return found if isinstance(found, property) else None
    return None


def _socket(connection: object) -> Optional[socket.socket]:
    """The connection's socket, if it has a real one yet (a recorder's stand-in is none)."""
    sock = getattr(connection, "sock", None)
    return sock if isinstance(sock, socket.socket) else None


class _LateSocket:
    """A connection whose socket is not open yet, for the deadline alarm: when it fires, the
    socket the connection has by then is shut down."""

    __slots__ = ("connection",)

    def __init__(self, connection: object) -> None:
        self.connection = connection

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _LateSocket) and other.connection is self.connection

    def __hash__(self) -> int:
        return id(self.connection)

    def shutdown(self, how: int) -> None:
        sock = _socket(self.connection)
        if sock is not None:
            sock.shutdown(how)


#: Whether the request this thread is sending got a socket (set by the SDK's connection classes).
_socket_used = threading.local()


class NotSent(requests.exceptions.ConnectionError):
    """A failure before any socket existed for the request (a CA bundle that is not there, a proxy
    URL that does not parse, a SOCKS proxy without PySocks): nothing left this process."""


#: Failures requests and urllib3 raise while preparing a request, before any connection.
_BEFORE_ANY_SOCKET = (requests.exceptions.InvalidSchema, requests.exceptions.InvalidURL,
                      requests.exceptions.MissingSchema, urllib3.exceptions.LocationValueError,
                      urllib3.exceptions.ProxySchemeUnknown)


class _WatchedConnection(_Watched, urllib3.connection.HTTPConnection):
    pass


class _WatchedHTTPSConnection(_Watched, urllib3.connection.HTTPSConnection):
    pass


@functools.lru_cache(maxsize=8)  # each holds its base class (vcrpy's holds its cassette)
def _watched_class(base: type) -> type:
    """The watched variant of a pool's connection class (vcrpy makes one class per cassette)."""
    # Compared with the classes these two were made from: a recorder patches the module's names too.
    for watched in (_WatchedConnection, _WatchedHTTPSConnection):
        if base is watched.__bases__[-1]:
            return watched
    return type(f"_Watched{base.__name__}", (_Watched, base), {"__module__": __name__})


class _Pool(urllib3.connectionpool.ConnectionPool):
    """Remembers that it was closed (the pool manager closes a pool it evicts), so the adapter's
    lookup cache never hands out a closed pool. Mixed in before a pool class of urllib3's."""

    sdk_closed = False

    def close(self) -> None:
        self.sdk_closed = True
        super().close()


class _WatchedPool(_Pool, urllib3.HTTPConnectionPool):
    @property
    def ConnectionCls(self) -> type:  # type: ignore[override]  # noqa: N802 (urllib3's name)
        # Looked up on each new connection: a class patched in later (a vcrpy cassette) is used.
        return _watched_class(urllib3.HTTPConnectionPool.ConnectionCls)


class _WatchedHTTPSPool(_Pool, urllib3.HTTPSConnectionPool):
    @property
    def ConnectionCls(self) -> type:  # type: ignore[override]  # noqa: N802
        return _watched_class(urllib3.HTTPSConnectionPool.ConnectionCls)


def _watched_pools(manager: urllib3.PoolManager) -> dict[str, type[urllib3.HTTPConnectionPool]]:
    """The watched pool classes for a pool manager: plain and HTTP(S)-proxy pools, or SOCKS ones."""
    socks = sys.modules.get("urllib3.contrib.socks")  # imported by requests once a socks:// proxy is used
    if socks is not None and isinstance(manager, socks.SOCKSProxyManager):
        return {"http": _socks_pool(False), "https": _socks_pool(True)}
    return {"http": _WatchedPool, "https": _WatchedHTTPSPool}


@functools.lru_cache(maxsize=None)
def _socks_pool(https: bool) -> type[urllib3.HTTPConnectionPool]:
    """A watched SOCKS pool class (PySocks negotiates inside the connect, so the socket is watched
    from the end of the SOCKS handshake on; the connect timeout bounds the handshake itself)."""
    from urllib3.contrib import socks

    conn_base = socks.SOCKSHTTPSConnection if https else socks.SOCKSConnection
    pool_base = socks.SOCKSHTTPSConnectionPool if https else socks.SOCKSHTTPConnectionPool
    connection = type("_WatchedSOCKSConnection", (_Watched, conn_base), {})
    return type("_WatchedSOCKSPool", (_Pool, pool_base), {"ConnectionCls": connection})


class _NoCookies(requests.cookies.RequestsCookieJar):
    """The jar of the SDK's own session: ``Session.send`` offers it every response's cookies, and
    the SDK keeps none (it sends no Cookie header either)."""

    def extract_cookies(self, response: object, request: object) -> None:
        return None


class _PooledAdapter(HTTPAdapter):
    """The SDK's own adapter: connections that tell the deadline watchdog their socket, an origin's
    pool looked up once (requests builds the pool key and parses the URL again on every request),
    the request path without requests' two URL parses, and a response without the header copy and
    cookie jar the SDK never reads. Only methods requests documents for subclasses are overridden."""

    def __init__(self, pool_connections: int = DEFAULT_POOLSIZE, pool_maxsize: int = DEFAULT_POOLSIZE,
                 max_retries: Union[Retry, int, None] = 0, pool_block: bool = DEFAULT_POOLBLOCK) -> None:
        super().__init__(pool_connections, pool_maxsize, max_retries, pool_block)
        self._pools: dict[tuple[str, object, object], _Pool] = {}

    def init_poolmanager(self, connections: int, maxsize: int, block: bool = DEFAULT_POOLBLOCK,
                         **pool_kwargs: object) -> None:
        super().init_poolmanager(connections, maxsize, block, **pool_kwargs)
        # Connections that tell the deadline watchdog their socket (see deadline.py).
        self.poolmanager.pool_classes_by_scheme = {"http": _WatchedPool, "https": _WatchedHTTPSPool}

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: object) -> urllib3.PoolManager:
        # A proxy's pools are the SDK's watched ones too: a proxy that drips its reply, or its
        # CONNECT answer, is cut at the deadline like a server. (A ProxyManager, or PySocks' manager.)
        manager: urllib3.PoolManager = super().proxy_manager_for(proxy, **proxy_kwargs)
        manager.pool_classes_by_scheme = _watched_pools(manager)
        return manager

    def get_connection_with_tls_context(self, request: requests.PreparedRequest, verify: Union[bool, str, None],
                                        proxies: Optional[Mapping[str, str]] = None,
                                        cert: Union[Tuple[str, str], str, None] = None,
                                        ) -> urllib3.connectionpool.ConnectionPool:
        # requests >= 2.32.2 calls this per request; older ones call get_connection (not cached).
        if proxies:
            return super().get_connection_with_tls_context(request, verify, proxies, cert)
        url = request.url or ""
        key = (url[:url.find("/", url.find("//") + 2)], verify if isinstance(verify, (bool, str)) else id(verify),
               cert if isinstance(cert, (str, tuple, type(None))) else id(cert))
        pool = self._pools.get(key)
        if pool is None or pool.sdk_closed:  # a pool the pool manager evicted is looked up again
            found = super().get_connection_with_tls_context(request, verify, proxies, cert)
            if not isinstance(found, _Pool):
                return found
            self._pools[key] = pool = found
        return pool

    def request_url(self, request: requests.PreparedRequest, proxies: Optional[Mapping[str, str]]) -> str:
        # requests parses the URL twice per request for this; without a proxy it is the path
        # (and query) as given, which the SDK's own URLs always have.
        url = request.url or ""
        host = url.find("//") + 2
        start = url.find("/", host)
        if proxies or host < 2 or start < 0 or "?" in url[host:start] or "#" in url:
            return super().request_url(request, proxies)
        return url[start:]

    def build_response(self, req: requests.PreparedRequest, resp: urllib3.BaseHTTPResponse) -> requests.Response:
        # requests' own builds a CaseInsensitiveDict copy of the headers and fills the response's
        # cookie jar; urllib3's headers are already case-insensitive, and the SDK keeps no cookies.
        response = requests.Response()
        response.status_code = resp.status
        # A reply that is not urllib3's (a recorder's stand-in) gets requests' own header mapping.
        headers = resp.headers
        # urllib3's HTTPHeaderDict is a case-insensitive mapping too (requests' stub names only its own).
        response.headers = headers if isinstance(resp, urllib3.response.HTTPResponse) \
            else CaseInsensitiveDict(headers)  # type: ignore[assignment]
        response.raw = resp
        response.reason = resp.reason  # type: ignore[assignment]  # None as requests' own leaves it
        response.url = req.url or ""
        response.request = req
        response.connection = self
        return response

    def close(self) -> None:
        # urllib3 2's PoolManager.clear() forgets its pools without closing them: their idle
        # connections (every stream read to its end) stayed open until the garbage collector ran,
        # or for good while a response still held its pool. Each pool is closed here; a connection
        # checked out of it now is closed when it is given back.
        pools: list[urllib3.connectionpool.ConnectionPool] = list(self._pools.values())
        for manager in (self.poolmanager, *self.proxy_manager.values()):
            for key in manager.pools.keys():
                pool = manager.pools.get(key)
                if pool is not None:
                    pools.append(pool)
        self._pools.clear()
        super().close()
        for pool in pools:
            pool.close()


class Transport:
    """The requests session of a client, and the per-origin settings resolved once."""

    def __init__(self, session: Optional[requests.Session] = None, pool_maxsize: int = 32) -> None:
        self._own_session = session is None
        self._pool_maxsize = pool_maxsize
        if session is None:
            session = _NoRedirectSession()
            # The environment is read once per origin below, not on every request.
            session.trust_env = False
            session.cookies = _NoCookies()
            self._mount_own_adapter(session)
        self.session = session
        self._settings: dict[str, _OriginSettings] = {}
        self._lock = threading.Lock()
        # A caller's plain HTTPAdapter, by id: the watched adapter used in its place.
        self._watched: dict[int, Tuple[HTTPAdapter, _PooledAdapter]] = {}
        self._pid = os.getpid()
        self.closed = False  #: close() was called (background senders stop trying: the run answers')
        _fork.register(self)

    def _mount_own_adapter(self, session: requests.Session) -> None:
        adapter = _PooledAdapter(pool_connections=8, pool_maxsize=self._pool_maxsize, max_retries=0)
        session.mount("http://", adapter)
        session.mount("https://", adapter)

    def _after_fork(self) -> None:
        """In a forked child: new, empty pools. The parent's pooled connections are its own (a child
        reading one would take the parent's reply), so they are dropped here, never shut down (that
        would end them for the parent too): the garbage collector only closes the child's copies of
        their descriptors, which sends nothing while the parent holds them. A caller's session gets
        the same for each mounted ``HTTPAdapter`` (re-initialised through its pickling protocol,
        which rebuilds the pool manager with the same settings); another adapter class is the
        caller's to handle."""
        self._lock = threading.Lock()  # another thread may have held it at the fork
        self._pid = os.getpid()
        self._watched = {}  # the parent's watched adapters hold the parent's pools
        if self._own_session:
            self._mount_own_adapter(self.session)
            return
        for adapter in list(self.session.adapters.values()):
            if isinstance(adapter, HTTPAdapter) and all(
                    getattr(type(adapter), name, None) is getattr(HTTPAdapter, name, False)
                    for name in ("__getstate__", "__setstate__")):
                state = adapter.__getstate__()
                adapter.__setstate__(state)  # type: ignore[attr-defined]

    def refuse_unbounded_adapters(self, base_urls: Iterable[str], paths: Iterable[str]) -> None:
        """A caller's adapter that retries (``HTTPAdapter(max_retries=Retry(...))``) runs urllib3's
        retries and backoff inside one attempt, where no deadline reaches: refused at construction.
        Every adapter requests could pick for a route the SDK sends to is looked at: the one for the
        origin and any mounted on a longer prefix a route's URL can start with (``base_url + "/v1/"``)."""
        if self._own_session:
            return
        routes = {path.split("?", 1)[0] for path in paths}  # the client's operations' path templates
        for base_url in base_urls:
            base = base_url.rstrip("/")
            for prefix in [base + "/"] + [p for p in self.session.adapters if p.lower().startswith(base.lower() + "/")]:
                if prefix != base + "/" and not any(_may_start(prefix[len(base):], route) for route in routes):
                    continue  # no URL the SDK sends starts with it
                self._refuse_retries(self.session.get_adapter(prefix), base_url)

    def _refuse_retries(self, adapter: object, base_url: str) -> None:
        retries = getattr(adapter, "max_retries", None)
        if retries is not None and _retries(retries):
            raise InvalidInputError(
                f"the session's adapter for {base_url} retries on its own ({retries!r}): urllib3's "
                "retries and backoff run inside one attempt, past the call's deadline, so the SDK "
                "cannot keep timeout=/deadline=. Mount an adapter without retries for this origin "
                "(HTTPAdapter(max_retries=0)); the SDK retries response_get itself "
                "(HermesClient(max_attempts=)) within the deadline",
                details={"reason": "adapter_retries", "origin": base_url})

    def _adapter_for(self, url: str) -> BaseAdapter:
        """The adapter that sends to ``url``: a caller's plain ``HTTPAdapter`` is replaced by a watched
        one with its pool sizes, whose sockets the deadline alarm gets at connect time (before the
        headers), as it does with the SDK's own session; any other adapter is the caller's."""
        adapter = self.session.get_adapter(url)
        if type(adapter) is not HTTPAdapter:
            # One mounted after construction, or on a prefix no route template showed: still refused.
            self._refuse_retries(adapter, url[:url.find("/", url.find("//") + 2)])
            return adapter
        entry = self._watched.get(id(adapter))
        if entry is None or entry[0] is not adapter:
            with self._lock:
                entry = self._watched.get(id(adapter))
                if entry is None or entry[0] is not adapter:
                    # requests keeps an adapter's pool sizes private: the watched one has requests'
                    # public defaults (a pool per origin grows as needed; it never blocks).
                    watched = _PooledAdapter(pool_connections=DEFAULT_POOLSIZE, pool_maxsize=DEFAULT_POOLSIZE,
                                             pool_block=DEFAULT_POOLBLOCK, max_retries=0)
                    entry = (adapter, watched)
                    self._watched[id(adapter)] = entry
        return entry[1]

    def _origin_settings(self, base_url: str) -> _OriginSettings:
        """Proxies, CA verification and client cert for an origin, resolved once.

        Our own session reads the environment here; a caller's session contributes its own
        ``proxies``, ``verify`` and ``cert`` (and the environment when its ``trust_env`` is set).
        """
        settings = self._settings.get(base_url)
        if settings is None:
            with self._lock:
                source = requests.Session() if self._own_session else self.session
                env = source.merge_environment_settings(base_url, {}, None, None, None)
                proxies = {k: v for k, v in (env.get("proxies") or {}).items() if v}
                settings = (proxies, env.get("verify", True), env.get("cert"))
                self._settings[base_url] = settings
        return settings

    def check_session_headers(self) -> None:
        """A caller's session headers go on every request: each must be sendable (checked before a key is spent)."""
        if self._own_session:
            return
        from .endpoints import validate_header_value

        for name, value in self.session.headers.items():
            if isinstance(value, str):
                validate_header_value(f"session.headers[{name!r}]", value)

    def send(self, endpoint: Endpoint, method: str, path: str, headers: Mapping[str, str],
             body: Optional[bytes], timeout: float, connect_timeout: float = CONNECT_TIMEOUT) -> requests.Response:
        """Send one attempt and return the response with its body unread (stream=True)."""
        if self._pid != os.getpid():  # forked without the at-fork hook (os.fork from C code)
            self._after_fork()
        prepared = requests.PreparedRequest()
        prepared.method = method
        prepared.url = endpoint.base_url + path
        framing: dict[str, str] = {}
        if body is not None:
            framing = {"Content-Type": "application/json", "Content-Length": str(len(body))}
        elif method in ("POST", "PUT", "PATCH", "DELETE"):
            framing = {"Content-Length": "0"}
        merged: MutableMapping[str, str] = {"User-Agent": USER_AGENT, "Accept-Encoding": ACCEPT_ENCODING,
                                            **headers, **framing}
        if not self._own_session or len({name.lower() for name in merged}) != len(merged):
            # Names that may differ only in case (a caller's session, a plugin's header): merged
            # case-insensitively, later ones winning. The SDK's own names are distinct, and a plain
            # dict is copied by urllib3 for a fraction of what a CaseInsensitiveDict costs.
            merged = self._merge_case_insensitively(headers, framing)
        prepared.headers = merged  # type: ignore[assignment]  # any mapping is sent (the stub names one class)
        prepared.body = body
        # Runs inside Session.send before it looks for a redirect: see _unredirect.
        prepared.hooks = {"response": [_unredirect]}
        proxies, verify, cert = self._origin_settings(endpoint.base_url)
        timeouts = (min(connect_timeout, timeout), timeout)
        if not _is_requests_send(type(self.session).send):
            # A mocking library (requests-mock patches Session.send) or a caller's session class
            # with its own send() (a tap, a signer): it gets the call.
            return self.session.send(prepared, stream=True, allow_redirects=False, proxies=proxies,
                                     verify=verify, cert=cert, timeout=timeouts)
        # requests' own Session.send only adds cookie and redirect bookkeeping the SDK does not use
        # (it keeps no cookies and follows no redirects): the session's mounted adapter is called as
        # Session.send calls it. A patched HTTPAdapter.send (the responses library) is still the one called.
        adapter = self.session.get_adapter(prepared.url) if self._own_session else self._adapter_for(prepared.url)
        # The SDK's own connections say when a socket exists; another adapter's failure is judged by its type.
        watched = isinstance(adapter, _PooledAdapter) and _is_adapter_send(type(adapter).send)
        _socket_used.value = False
        try:
            # verify=None (a session's own) is passed on as Session.send passes it; the stub says bool | str.
            return adapter.send(prepared, stream=True, proxies=proxies, verify=verify,  # type: ignore[arg-type]
                                cert=cert, timeout=timeouts)
        except WIRE_FAULTS as exc:
            if _is_connect_failure(exc) or not (
                    (watched and not _socket_used.value) or isinstance(exc, _BEFORE_ANY_SOCKET)):
                raise
            failure = NotSent(exc, request=prepared)
        raise failure

    def _merge_case_insensitively(self, headers: Mapping[str, str],
                                  framing: Mapping[str, str]) -> CaseInsensitiveDict[str]:
        merged: CaseInsensitiveDict[str] = CaseInsensitiveDict(
            {"User-Agent": USER_AGENT, "Accept-Encoding": ACCEPT_ENCODING})
        if not self._own_session:
            # A caller's session headers apply; ours win below (requests' default asks for gzip).
            merged.update({k: v if isinstance(v, str) else v.decode("latin-1")
                           for k, v in self.session.headers.items()})
            merged["User-Agent"] = USER_AGENT
            merged["Accept-Encoding"] = ACCEPT_ENCODING
        merged.update(headers)
        merged.update(framing)
        return merged

    def close(self) -> None:
        """Close the pool (a caller's own session is left open; the watched adapters used for it close)."""
        self.closed = True
        if self._own_session:
            self.session.close()
        with self._lock:
            watched, self._watched = list(self._watched.values()), {}
        for _, adapter in watched:
            adapter.close()


def _may_start(path: str, route: str) -> bool:
    """Whether some URL path of ``route`` (``/api/things/{thing_id}/parts``) starts with ``path``,
    compared as requests matches mount prefixes (case-insensitively); a parameter is one segment."""
    path, i = path.lower(), 0
    for part in re.split(r"(\{[^}]*\})", route.lower()):
        if i >= len(path):
            return True
        if part.startswith("{"):
            while i < len(path) and path[i] != "/":
                i += 1
        else:
            seen = path[i:i + len(part)]
            if not part.startswith(seen):
                return False
            i += len(seen)
    return i >= len(path)


def _retries(retry: object) -> bool:
    """Whether a urllib3 ``Retry`` (or a count) retries anything: ``total`` decides when it is set."""
    if retry is None or retry is False:
        return False
    if isinstance(retry, int):
        return retry > 0
    total = getattr(retry, "total", None)
    if total is False:
        return False
    if isinstance(total, int):
        return total > 0
    counts = [getattr(retry, name, None) for name in ("connect", "read", "status", "other")]
    return any(count is None or (count is not False and count > 0) for count in counts)


def _is_requests_send(send: object) -> bool:
    """Whether ``send`` is requests' own ``Session.send``, not a patch or an override (told by its
    name, so a mock started before or after this module was imported is seen either way)."""
    return getattr(send, "__module__", None) == "requests.sessions" and \
        getattr(send, "__qualname__", None) == "Session.send"


def _is_adapter_send(send: object) -> bool:
    """Whether ``send`` is requests' own ``HTTPAdapter.send`` (not a mocking library's patch)."""
    return getattr(send, "__module__", None) == "requests.adapters" and \
        getattr(send, "__qualname__", None) == "HTTPAdapter.send"


def socket_of(response: requests.Response) -> Optional[Shutdownable]:
    """The socket under a response (urllib3's ``HTTPResponse.connection``), so the deadline watchdog
    can cut it; None when unknown (a mocked body, or a connection already back in the pool)."""
    connection = getattr(response.raw, "connection", None)
    return getattr(connection, "sock", None)


def _unredirect(response: requests.Response, **_: object) -> requests.Response:
    """Hide a 3xx's ``Location`` from ``Session.send``, which otherwise reads the whole (unbounded)
    body of a redirect to build ``Response.next``, even with ``allow_redirects=False``. Our session
    never does (``_NoRedirectSession``); a caller's session would. The SDK never follows redirects;
    the target stays readable as ``X-Hermes-SDK-Redirect-Location``."""
    if 300 <= response.status_code < 400 and "Location" in response.headers:
        response.headers["X-Hermes-SDK-Redirect-Location"] = response.headers.pop("Location")
    return response


def check_framing(response: requests.Response) -> None:
    """Refuse a body whose length no one can know: a ``Content-Length`` that is not ASCII digits
    (``²``, ``-1``, ``1, 2``) on a reply without ``Transfer-Encoding``. RFC 9112 section 6.3 makes
    that an unrecoverable error: the connection is closed, the reply is ``invalid_response``."""
    headers = response.headers
    value = headers.get("Content-Length")
    if value is not None and "Transfer-Encoding" not in headers and content_length(value) is None:
        response.close()
        raise InvalidResponseError("Hermes' reply has malformed HTTP framing (a Content-Length that is not a number)",
                                   details={"reason": "malformed_framing", "header": "Content-Length"})


def read_body(response: requests.Response, limit: int = MAX_JSON_RESPONSE_BYTES) -> bytes:
    """Read a whole (non-SSE) body, refusing more than ``limit`` bytes, then free the connection."""
    check_framing(response)
    headers = response.headers
    length = content_length(headers.get("Content-Length"))
    sized = length is not None
    if length is not None and length > limit:
        response.close()
        raise InvalidResponseError(f"response body of {length} bytes exceeds the {limit}-byte limit",
                                   details={"limit_bytes": limit})
    raw = response.raw
    try:
        coding = coding_of(headers)
        if coding is not None:  # not asked for: decoded here, at most limit + 1 bytes of it
            data = _read_inflated(raw, coding, limit)
        elif sized:
            # http.client reads exactly Content-Length bytes (within the limit, checked above) in
            # one read; read(amt) would read twice and go through urllib3's decoded-bytes buffer.
            data = raw.read(decode_content=False)
        else:  # chunked or close-delimited: at most limit + 1 bytes
            data = raw.read(limit + 1, decode_content=False)
    except urllib3.exceptions.HTTPError as exc:
        # A body cut short or timed out: raise it as requests would, so callers type it as transport.
        response.close()
        if isinstance(exc, urllib3.exceptions.ReadTimeoutError):
            raise requests.exceptions.ReadTimeout(exc) from None
        raise requests.exceptions.ConnectionError(exc) from None
    except HermesError:
        response.close()
        raise
    except FRAMING_FAULTS as exc:
        # Framing no parser accepts (a negative chunk size, a Content-Length of "²"): a bad reply,
        # never a raw ValueError (which the plugin layer would report as a plugin failure).
        response.close()
        raise InvalidResponseError(f"Hermes' reply has malformed HTTP framing ({type(exc).__name__})",
                                   details={"reason": "malformed_framing", "exception": type(exc).__name__}) from None
    if len(data) > limit:
        response.close()
        raise InvalidResponseError(f"response body exceeds the {limit}-byte limit",
                                   details={"limit_bytes": limit})
    # Fully read: hand the connection back to the pool for reuse (a recorder's reply, vcrpy 8's, has no pool).
    release = getattr(raw, "release_conn", None)
    if release is not None:
        release()
    return data


def _read_inflated(raw: urllib3.response.HTTPResponse, coding: str, limit: int) -> bytes:
    """A compressed body decoded to at most ``limit`` bytes (a bomb costs the limit, never what it
    inflates to), from at most ``limit`` compressed bytes."""
    inflater = Inflater(coding)
    out: list[bytes] = []
    size = taken = 0
    while True:
        data = raw.read(READ_CHUNK_BYTES, decode_content=False)
        taken += len(data)
        piece = inflater.feed(data, limit + 1 - size)
        while True:
            out.append(piece)
            size += len(piece)
            if size > limit or taken > limit:
                raise InvalidResponseError(f"response body exceeds the {limit}-byte limit",
                                           details={"limit_bytes": limit, "content_encoding": coding})
            if not inflater.pending:
                break
            piece = inflater.feed(b"", limit + 1 - size)
            if not piece:
                break
        if not data:
            if taken and not inflater.ended:
                raise InvalidResponseError("Hermes' compressed reply ends before its compressed stream does",
                                           details={"reason": "corrupt_content_encoding"})
            return b"".join(out)


def decode_json(data: bytes) -> object:
    """The connector's decoding: blank is None, non-JSON becomes ``{"text": raw}``; JSON nested too
    deep for the decoder is an invalid response (never a raw RecursionError)."""
    if not data.strip():
        return None
    try:
        return json.loads(data)
    except RecursionError:
        raise InvalidResponseError("response JSON is nested too deep to decode",
                                   details={"reason": "json_too_deep"}) from None
    except ValueError:
        try:
            return {"text": data.decode("utf-8")}
        except UnicodeDecodeError:
            raise InvalidResponseError("response body is neither JSON nor UTF-8 text") from None


def decode_reply(data: bytes) -> object:
    """A 2xx body: strict JSON. Anything else is ``invalid_response``, never an empty success."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        raise InvalidResponseError("Hermes' reply is not a JSON document",
                                   details={"body_bytes": len(data)}) from None


def retry_after_ms(response: requests.Response) -> Optional[int]:
    """Retry-After (delta seconds or an HTTP-date) in ms, capped at RETRY_AFTER_CAP; never raises.

    ``inf``, ``1e309``, NaN and absurd values are a server's mistake or an attack: a non-finite or
    huge delay is reported as the cap, a negative one or a date in the past as 0, garbage as None.
    """
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    cap = RETRY_AFTER_CAP
    text = value.strip()[:64]
    try:
        seconds = float(text)
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            seconds = parsedate_to_datetime(text).timestamp() - time.time()
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    if math.isnan(seconds):
        return None
    return int(min(max(seconds, 0.0), cap) * 1000)


def error_for_status(response: requests.Response, contract: Contract) -> HermesError:
    """Map a non-2xx provider response to a typed error, keeping what the connector drops.

    The class comes from the status (:func:`hermes_sdk.errors.status_error_class`); the message and
    details from the (small, bounded) body.
    """
    status = response.status_code
    message, details, code = _error_reply(response, contract)
    text = f"Hermes returned HTTP {status}" + (f": {message}" if message else "")
    klass = status_error_class(status, code)
    if not issubclass(klass, RemoteTemporaryError):
        if 300 <= status < 400:
            details["redirect_not_followed"] = True
        return klass(text, http_status=status, details=details)
    if status == 429 or (status == 503 and code == "gateway_draining"):
        # Hermes answers both before any agent work. The protocol fields stay conservative, as the
        # connector's are, for model calls; the fact itself is kept in details.
        details["before_agent_work"] = True
    return DEFAULT_POLICY.classify(contract, klass(text, http_status=status, details=details,
                                                   retry_after_ms=retry_after_ms(response),
                                                   uncertain_outcome=not contract.read_only))


def _error_reply(response: requests.Response, contract: Contract) -> tuple[str, dict[str, object], object]:
    """The message, details and provider ``error.code`` of an error reply's body."""
    try:
        # A small bounded read: an error body adds detail, never megabytes (redirects included).
        payload = decode_json(read_body(response, MAX_ERROR_BODY_BYTES))
    except (HermesError,) + WIRE_FAULTS:
        payload = None  # the status alone decides the error; an unreadable body adds nothing
    err = payload.get("error") if isinstance(payload, dict) else None
    details: dict[str, object] = {"operation": contract.operation, "remote_status": response.status_code}
    if isinstance(err, dict):
        provider = {k: err.get(k) for k in ("type", "code", "param") if err.get(k) is not None}
        if provider:
            details["provider_error"] = provider
        if isinstance(err.get("hermes"), dict):
            details["hermes"] = err["hermes"]
        return str(err.get("message") or ""), details, provider.get("code")
    if isinstance(err, str):  # the jobs routes' {"error": "<text>"} shape
        details["provider_message"] = err
        return err, details, None
    text = payload.get("text") if isinstance(payload, dict) else None
    return text or response.reason or "", details, None


def error_for_exception(exc: BaseException, contract: Contract, *, deadline_hit: bool = False,
                        origin: Optional[str] = None) -> HermesError:
    """Map a requests/urllib3 failure. A connect failure sent nothing; a read failure may have.

    The message names the URL origin (from ``origin``, else the failed request; never a path, which
    can hold a response id) and the cause in plain words ("connection refused", "name resolution
    failed", ...), and says what ``uncertain_outcome`` means for this failure: False for a connect
    failure (``details["sent"]`` False: nothing left this process), True for a model call's later
    one. The returned error's ``__cause__`` is a redacted stand-in for ``exc`` (its type, errno and
    scrubbed text, without the urllib3 and pluggy frames), so raise it with a plain ``raise``:
    ``raise ... from None`` would drop the cause again. ``details["cause"]`` holds the same text.
    """
    read_only = contract.read_only
    connect = isinstance(exc, NotSent) or isinstance(
        exc, (requests.exceptions.ConnectionError, requests.exceptions.ConnectTimeout)) and (
        isinstance(exc, requests.exceptions.ConnectTimeout) or _is_connect_failure(exc))
    # A model call's transport failure is uncertain once the request may have left; a connect
    # failure sent nothing, so its outcome is certain (the connector's blanket rule says uncertain).
    uncertain = not read_only and not connect
    where = origin or _origin_of(exc)
    at = f" at {where}" if where else ""
    cause = _redacted_cause(exc)
    details: dict[str, object] = {"operation": contract.operation, "exception": type(exc).__name__,
                               "connect_failure": connect, "cause": f"{type(cause).__name__}: {cause}"}
    if where:
        details["origin"] = where
    if connect:
        details["sent"] = False
    if deadline_hit:
        error: HermesError = DeadlineExceededError(
            f"the call's deadline passed while waiting for Hermes{at}", uncertain_outcome=uncertain,
            details=details)
    elif isinstance(exc, HermesError):
        return exc
    else:
        reason = _describe(exc, connect)
        if isinstance(exc, NotSent):
            message = f"the request to Hermes{at} failed before any connection was made ({reason}); nothing was sent"
        elif connect:
            message = (f"could not connect to Hermes{at} ({reason}); nothing was sent. "
                       "Is Hermes running there, and is HERMES_BASE_URL right?")
        else:
            message = f"transport failure talking to Hermes{at} ({reason})"
            if uncertain:
                message += ("; the request was sent, so the model may have run (uncertain_outcome=True): "
                            "read client.action_result(action_id) before any retry (docs: Errors and recovery)")
        error = DEFAULT_POLICY.classify(contract, TransportError(message, uncertain_outcome=uncertain,
                                                                 details=details))
    error.__cause__ = cause
    error.__suppress_context__ = True
    return error


class TransportCause(Exception):
    """A redacted stand-in for an underlying transport exception: its type name and scrubbed text."""

    def __init__(self, type_name: str, text: str) -> None:
        super().__init__(text)
        self.type_name = type_name

    def __str__(self) -> str:
        return f"{self.type_name}: {self.args[0]}" if self.args[0] else self.type_name


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and what caused it: urllib3's ``reason``, requests' wrapped first argument, ``__cause__``."""
    import urllib3.exceptions as u3

    out: list[BaseException] = []
    cur: Optional[BaseException] = exc
    while cur is not None and all(cur is not seen for seen in out) and len(out) < 16:
        out.append(cur)
        if isinstance(cur, u3.MaxRetryError) and cur.reason is not None:
            cur = cur.reason
            continue
        cur = (cur.args[0] if cur.args and isinstance(cur.args[0], BaseException) else None) or cur.__cause__ \
            or cur.__context__
    return out


def _origin_of(exc: BaseException) -> Optional[str]:
    """``scheme://host:port`` of the request that failed, when the exception carries it."""
    request = getattr(exc, "request", None)
    url = getattr(request, "url", None)
    if not isinstance(url, str):
        return None
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "") \
            if parts.scheme and parts.hostname else None
    except ValueError:
        return None


def _describe(exc: BaseException, connect: bool) -> str:
    import ssl

    chain = _chain(exc)
    for cur in chain:
        if isinstance(cur, ConnectionRefusedError) or "Connection refused" in str(cur):
            return "connection refused"
        if isinstance(cur, socket.gaierror) or "Name or service not known" in str(cur) \
                or "getaddrinfo failed" in str(cur) or "nodename nor servname" in str(cur):
            return "name resolution failed (check the host name)"
        if isinstance(cur, (ssl.SSLError, requests.exceptions.SSLError)):
            return "TLS handshake failed (check https vs http, the CA bundle and the certificate)"
        if isinstance(cur, ConnectionResetError):
            return "connection reset by the server"
    if isinstance(exc, NotSent):
        inner = chain[1] if len(chain) > 1 else exc
        if isinstance(inner, requests.exceptions.InvalidSchema):
            return "a proxy scheme requests cannot use here (socks:// needs PySocks: pip install requests[socks])"
        if isinstance(inner, (requests.exceptions.InvalidURL, urllib3.exceptions.LocationValueError)):
            return "a URL or proxy URL that does not parse (check HTTP_PROXY / HTTPS_PROXY and the base URL)"
        if type(inner) is OSError:  # requests' own check of verify= / cert= paths
            return ("a CA bundle or client certificate file that cannot be read "
                    "(check verify=, cert=, REQUESTS_CA_BUNDLE)")
        return type(inner).__name__
    if isinstance(exc, requests.exceptions.ConnectTimeout) or (connect and "timed out" in str(exc)):
        return "connect timed out"
    if isinstance(exc, requests.exceptions.Timeout):
        return "timed out waiting for the response"
    if any(isinstance(cur, (urllib3.exceptions.ProtocolError, ConnectionAbortedError)) for cur in chain):
        return "the connection was closed before the response was complete"
    return f"{type(exc).__name__}"


def _redacted_cause(exc: BaseException) -> BaseException:
    """The innermost OS error recreated from its errno and text (nothing secret in them), or a
    ``TransportCause`` with the scrubbed text of the innermost exception."""
    from .redaction import scrub

    chain = _chain(exc)
    for cur in reversed(chain):
        if type(cur) in (ConnectionRefusedError, ConnectionResetError, ConnectionAbortedError, TimeoutError) \
                and isinstance(cur, OSError) and cur.errno is not None:
            return type(cur)(cur.errno, cur.strerror)
    inner = chain[-1]
    text = scrub(str(inner))
    text = re.sub(r"(url: )/\S*", r"\1[REDACTED]", text)  # urllib3 names the request path
    return TransportCause(type(inner).__name__, text[:500])


def _is_connect_failure(exc: BaseException) -> bool:
    import urllib3.exceptions as u3

    seen = set()
    cur: Optional[BaseException] = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, (u3.NewConnectionError, u3.ConnectTimeoutError, ConnectionRefusedError)):
            return True
        if isinstance(cur, u3.MaxRetryError) and cur.reason is not None:
            cur = cur.reason
            continue
        cur = (cur.args[0] if cur.args and isinstance(cur.args[0], BaseException) else None) or cur.__cause__
    return False
