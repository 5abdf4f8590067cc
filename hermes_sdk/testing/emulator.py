"""``HermesEmulator``: a Hermes-compatible server on loopback for tests (0.19.0; 0.20.1 and 0.22.2
with ``server_version=``)."""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypedDict

from . import families
from .controls import FamilyControls, controls_of
from .cron import Ticker
from .model import Reply, ReplyLike, RequestInfo, Responder
from .routes import reset_families
from .server import HermesHTTPServer
from .state import FAULT_MODES, EmulatorState, Fault, SeenRequest, Settings
from .tools import DEFAULT_TOOLSETS, TOOLSET_TOOLS
from .versions import SERVER_VERSIONS, check_version

if TYPE_CHECKING:
    import argparse

    from typing_extensions import Unpack  # typing.Unpack is 3.11+; only mypy reads it

    from .._app.client import HermesClient


class EmulatorOptions(TypedDict, total=False):
    """The keyword-only options of :class:`HermesEmulator` (what :func:`options_from` returns)."""

    max_concurrent_runs: int
    max_stored_responses: int
    keepalive_seconds: float
    delta_batch_ms: float
    framing: str
    token_delay: float
    api_max_retries: int
    verbose: bool
    toolsets: Sequence[str]
    approval_mode: str
    approval_timeout: float
    run_events_keepalive_seconds: float
    run_stream_ttl: float
    run_status_ttl: float
    files: Mapping[str, str] | None
    tool_followup_delay: float
    stop_latency: float
    jobs_tick_seconds: float
    server_version: str

APPROVAL_MODES = ("manual", "smart", "off")


class HermesEmulator(FamilyControls):
    """A Hermes-compatible HTTP server with a deterministic scripted model.

    Stdlib only, bound to ``host`` (loopback by default) on an ephemeral port
    unless ``port`` is given. It must not import ``hermes_sdk`` at module load
    so it stays usable on its own; ``client()`` imports the SDK lazily.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str = "test-key",
        *,
        max_concurrent_runs: int = 10,
        max_stored_responses: int = 100,
        keepalive_seconds: float = 30.0,
        delta_batch_ms: float = 0,
        framing: str = "chunked",
        token_delay: float = 0.0,
        api_max_retries: int = 1,
        verbose: bool = False,
        toolsets: Sequence[str] = (),
        approval_mode: str = "manual",
        approval_timeout: float = 60.0,
        run_events_keepalive_seconds: float = 30.0,
        run_stream_ttl: float = 300.0,
        run_status_ttl: float = 3600.0,
        files: Mapping[str, str] | None = None,
        tool_followup_delay: float = 0.2,
        stop_latency: float = 0.2,
        jobs_tick_seconds: float = 60.0,
        server_version: str = "0.19.0",
    ) -> None:
        """``toolsets`` like Hermes' ``platform_toolsets.api_server`` (``()`` = no tools, the
        peer default; ``TOOLSETS`` = ``("terminal", "file", "todo")`` as in the captures);
        ``approval_mode``/``approval_timeout`` like ``approvals.mode``/``approvals.timeout``;
        ``run_events_keepalive_seconds``, ``run_stream_ttl`` and ``run_status_ttl`` are the
        runs' SSE keepalive, unsubscribed-buffer sweep and finished-run retention (Hermes:
        30, 300 and 3600 s); ``files`` seeds the simulated file system the tools act on;
        ``tool_followup_delay`` is how long the model call after a tool turn takes and
        ``stop_latency`` how long ``POST /v1/runs/{id}/stop`` takes to interrupt the agent;
        ``jobs_tick_seconds`` is the cron ticker's interval (Hermes: 60 s; 0 = only ``tick_jobs()``);
        ``server_version`` is the Hermes release played: ``0.19.0`` (default), ``0.20.1`` or
        ``0.22.2`` (see :mod:`hermes_sdk.testing.versions` for what each adds).
        """
        if framing not in ("chunked", "close"):
            raise ValueError("framing must be 'chunked' or 'close'")
        _check_tools(toolsets, approval_mode)
        check_version(server_version)
        self.host = host
        self._port = port
        self._verbose = verbose
        self._state = EmulatorState(
            Settings(
                api_key=api_key,
                max_concurrent_runs=max(0, max_concurrent_runs),
                keepalive_seconds=keepalive_seconds,
                delta_batch_ms=delta_batch_ms,
                framing=framing,
                approval_timeout=approval_timeout,
                run_events_keepalive_seconds=run_events_keepalive_seconds,
                run_stream_ttl=run_stream_ttl,
                run_status_ttl=run_status_ttl,
                stop_latency=max(0.0, stop_latency),
                jobs_tick_seconds=max(0.0, jobs_tick_seconds),
                server_version=server_version,
            ),
            max_stored_responses=max_stored_responses,
            token_delay=token_delay,
        )
        model = self._state.model
        model.default_api_max_retries = model.api_max_retries = max(1, api_max_retries)
        self._state.default_toolsets = model.toolbox.toolsets = tuple(toolsets)
        self._state.default_approval_mode = model.toolbox.approval_mode = approval_mode
        model.toolbox.files.update(files or {})
        model.followup_delay = max(0.0, tool_followup_delay)
        self._families = tuple(families.FAMILY_MODULES)  # what this emulator serves, read once
        self._controls = controls_of(self._families, self._state)
        self._server: HermesHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._ticker: Ticker | None = None

    # -- lifecycle --------------------------------------------------------------
    def start(self) -> HermesEmulator:
        """Start serving on a background thread and return the emulator; a no-op when running."""
        if self._server is not None:
            return self
        self._state.model.stopping.clear()
        self._server = HermesHTTPServer((self.host, self._port), self._state, self._families, self._verbose)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name="hermes-emulator",
        )
        self._thread.start()
        self._ticker = Ticker(self._state)
        self._ticker.start()
        return self

    def stop(self) -> None:
        """Stop serving: interrupt slow runs, close every connection and join the server thread."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._state.model.stopping.set()  # interrupt SLOW sleeps and token delays
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None
        server.shutdown()
        server.server_close()
        server.close_all()
        if thread is not None:
            thread.join(5.0)
        self._server = self._thread = None

    def __enter__(self) -> HermesEmulator:  # noqa: PYI034 - no typing.Self on 3.9
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """Whether the emulator is serving."""
        return self._server is not None

    @property
    def port(self) -> int:
        """The port it listens on (RuntimeError when not running)."""
        if self._server is None:
            raise RuntimeError("emulator is not running; call start()")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The bare origin to give a client, e.g. ``http://127.0.0.1:40123``."""
        host = self.host if ":" not in self.host else f"[{self.host}]"
        return f"http://{host}:{self.port}"

    @property
    def api_key(self) -> str:
        """The Bearer key the emulator accepts."""
        return self._state.settings.api_key

    def client(self, **kwargs: Any) -> HermesClient:
        """A :class:`hermes_sdk.HermesClient` pointed at this emulator (``kwargs`` go to it)."""
        # Lazy: serving must never need the SDK (which may not even import yet).
        client_cls: type[HermesClient] = importlib.import_module("hermes_sdk._app.client").HermesClient

        kwargs.setdefault("base_url", self.base_url)
        kwargs.setdefault("api_key", self.api_key)
        return client_cls(**kwargs)

    # -- model controls -----------------------------------------------------------
    def script(self, *replies: ReplyLike | Responder, responder: Responder | None = None) -> None:
        """Queue replies (``str`` or ``Reply``) for the next executions, FIFO.

        A single callable argument (or ``responder=``) answers every execution
        once the queue is empty: ``fn(RequestInfo) -> str | Reply``.
        """
        queued: list[ReplyLike] = []
        for reply in replies:
            if callable(reply) and not isinstance(reply, (str, Reply)):
                responder = reply
            else:
                queued.append(reply)
        self._state.model.script(queued, responder)

    def fail_next(self, count: int = 1, *, status: int = 500) -> None:
        """Make the next ``count`` executions fail as an upstream 500/400/401 would."""
        self._state.model.fail_next(count, status)

    def force_truncation(self, enabled: bool = True, *, empty: bool = False) -> None:
        """Make every execution end truncated (``ECHO-PART`` x4, or no text if ``empty``)."""
        self._state.model.force_truncation(enabled, empty)

    @property
    def token_delay(self) -> float:
        """Seconds the model waits before each streamed piece (0 for none); settable."""
        return self._state.model.token_delay

    @token_delay.setter
    def token_delay(self, seconds: float) -> None:
        self._state.model.token_delay = seconds

    # -- server switches ------------------------------------------------------------
    @property
    def framing(self) -> str:
        """How SSE bodies are framed, ``chunked`` (as aiohttp) or ``close`` (close-delimited); settable."""
        return self._state.settings.framing

    @framing.setter
    def framing(self, value: str) -> None:
        if value not in ("chunked", "close"):
            raise ValueError("framing must be 'chunked' or 'close'")
        self._state.settings.framing = value

    @property
    def keepalive_seconds(self) -> float:
        """Idle seconds before a stream sends a ``: keepalive`` comment; settable."""
        return self._state.settings.keepalive_seconds

    @keepalive_seconds.setter
    def keepalive_seconds(self, value: float) -> None:
        self._state.settings.keepalive_seconds = value

    @property
    def delta_batch_ms(self) -> float:
        """Milliseconds over which streamed pieces are batched into one event (0 for none); settable."""
        return self._state.settings.delta_batch_ms

    @delta_batch_ms.setter
    def delta_batch_ms(self, value: float) -> None:
        self._state.settings.delta_batch_ms = value

    @property
    def max_concurrent_runs(self) -> int:
        """The run cap, beyond which agent routes answer 429 (0 for none); settable."""
        return self._state.settings.max_concurrent_runs

    @max_concurrent_runs.setter
    def max_concurrent_runs(self, value: int) -> None:
        self._state.settings.max_concurrent_runs = max(0, value)

    @property
    def draining(self) -> bool:
        """While True, agent routes answer 503 ``gateway_draining`` with ``Retry-After: 1``."""
        return self._state.settings.draining

    @draining.setter
    def draining(self, value: bool) -> None:
        self._state.settings.draining = bool(value)

    # -- tools, approvals and runs ------------------------------------------------------
    @property
    def toolsets(self) -> tuple[str, ...]:
        """Enabled toolsets (``platform_toolsets.api_server``); ``()`` disables tool calls."""
        return self._state.model.toolbox.toolsets

    @toolsets.setter
    def toolsets(self, value: Sequence[str]) -> None:
        _check_tools(value, self.approval_mode)
        self._state.model.toolbox.toolsets = tuple(value)

    @property
    def approval_mode(self) -> str:
        """``manual`` (ask), ``smart`` (``smart-approve``/``smart-deny`` in the command) or ``off``."""
        return self._state.model.toolbox.approval_mode

    @approval_mode.setter
    def approval_mode(self, value: str) -> None:
        _check_tools(self.toolsets, value)
        self._state.model.toolbox.approval_mode = value

    @property
    def tool_followup_delay(self) -> float:
        return self._state.model.followup_delay

    @tool_followup_delay.setter
    def tool_followup_delay(self, seconds: float) -> None:
        self._state.model.followup_delay = max(0.0, float(seconds))

    @property
    def files(self) -> dict[str, str]:
        """The simulated file system (path -> text) that terminal/read_file/write_file act on.

        Nothing touches the real disk: ``rm -rf <dir>`` removes the entries under ``<dir>``.
        """
        return self._state.model.toolbox.files

    @property
    def command_allowlist(self) -> set[str]:
        """Pattern keys approved with ``always`` (process-wide, like Hermes' ``command_allowlist``)."""
        return self._state.model.toolbox.command_allowlist

    def drop_connection(
        self,
        mode: str = "before_response",
        *,
        path: str | None = None,
        count: int = 1,
        after_events: int = 1,
        after_execution: bool = True,
    ) -> None:
        """Arm a connection fault for the next ``count`` matching requests.

        ``mode``: ``"before_response"`` (no response bytes at all; the model
        still runs unless ``after_execution=False``), ``"mid_body"`` (headers
        and part of the JSON body; for SSE, headers only) or ``"mid_stream"``
        (SSE cut after ``after_events`` events; for JSON same as mid_body).
        ``path`` defaults to the agent POST routes (chat, Responses, ``/v1/runs``); a
        dropped ``POST /v1/runs`` still starts the run (unless ``after_execution=False``).
        """
        if mode not in FAULT_MODES:
            raise ValueError(f"mode must be one of {FAULT_MODES}")
        self._state.arm(
            Fault(
                mode=mode,
                path=path,
                count=count,
                after_events=after_events,
                after_execution=after_execution,
            )
        )

    def refuse(self, path: str, *, count: int = 1, status: int = 503, retry_after: str | None = None) -> None:
        """Answer the next ``count`` requests to ``path`` (``*`` matches any text: ``/v1/runs/*/approval``)
        with ``status`` and an error body, before the route runs (a proxy or a restarting server's
        refusal: nothing is applied); ``retry_after`` is sent as ``Retry-After``. They are still
        listed in :attr:`requests_seen`."""
        self._state.arm(Fault(mode="refuse", path=path, count=count, status=status, retry_after=retry_after))

    # -- observation --------------------------------------------------------------------
    @property
    def executions(self) -> int:
        """Model executions so far (idempotency-cache hits do not count)."""
        return self._state.model.executions

    @property
    def upstream_calls(self) -> list[dict[str, object]]:
        """Upstream LLM calls a real Hermes would have made (the fake LLM's log).

        An execution is one call, an upstream 5xx ``api_max_retries`` calls, and a
        truncated run four; each entry is ``{"roles", "n_messages", "last_user"}``.
        """
        return self._state.model.upstream_calls

    @property
    def api_max_retries(self) -> int:
        """Hermes' ``agent.api_max_retries`` (tries for an upstream 5xx); default 1."""
        return self._state.model.api_max_retries

    @api_max_retries.setter
    def api_max_retries(self, value: int) -> None:
        self._state.model.api_max_retries = max(1, value)

    @property
    def requests_seen(self) -> list[SeenRequest]:
        """Every request received so far, in order, as :class:`~hermes_sdk.testing.SeenRequest` objects."""
        return self._state.requests

    @property
    def connections(self) -> int:
        """TCP connections accepted (keep-alive reuse keeps this low)."""
        return self._state.connections

    @property
    def active_runs(self) -> int:
        """Agent runs in flight now."""
        return self._state.active_runs

    def reset(self) -> None:
        """Clear scripts, faults, counters, stores and restore constructor settings."""
        self._state.reset()
        reset_families(self._families, self._state)

    def __repr__(self) -> str:
        where = self.base_url if self.running else "stopped"
        return f"<HermesEmulator {where}>"


def _check_tools(toolsets: Sequence[str], approval_mode: str) -> None:
    unknown = [t for t in toolsets if t not in TOOLSET_TOOLS]
    if unknown:
        raise ValueError(f"unsupported toolsets {unknown}; the emulator simulates {sorted(TOOLSET_TOOLS)}")
    if approval_mode not in APPROVAL_MODES:
        raise ValueError(f"approval_mode must be one of {APPROVAL_MODES}")


TOOLSETS = DEFAULT_TOOLSETS


def serve(
    host: str = "127.0.0.1",
    port: int = 8642,
    api_key: str = "test-key",
    *,
    ready: Callable[[str], None] | None = None,
    **options: Unpack[EmulatorOptions],
) -> None:
    """Run an emulator in the foreground until SIGINT or SIGTERM (whatever disposition the process
    inherited: ``cmd &`` ignores SIGINT); print its base URL."""
    from .._core._signals import interrupt_on_signals

    with interrupt_on_signals():
        try:
            emulator = HermesEmulator(host, port, api_key, **options).start()
            announce = ready or (lambda url: print(url, flush=True))
            announce(emulator.base_url)
            try:
                while emulator.running:
                    threading.Event().wait(0.5)
            finally:
                emulator.stop()
        except KeyboardInterrupt:
            pass


def add_options(parser: argparse.ArgumentParser) -> None:
    """Add the emulator's behaviour options to an ``argparse`` parser (``--tools``, ...).

    ``python -m hermes_sdk.testing`` and ``hermes-sdk emulator`` share them; read them back with
    :func:`options_from`.
    """
    parser.add_argument("--tools", action="store_true",
                        help="enable the terminal, file and todo toolsets, so runs call tools and ask for "
                             "approval before a dangerous command (TOOL:terminal:rm -rf build)")
    parser.add_argument("--approval-mode", choices=APPROVAL_MODES, default="manual",
                        help="Hermes' approvals.mode: manual asks about every flagged command, smart lets "
                             "its judge approve some first, off never asks (default: %(default)s)")
    parser.add_argument("--server-version", choices=SERVER_VERSIONS, default="0.19.0",
                        help="the Hermes release to play (default: %(default)s)")
    parser.add_argument("--approval-timeout", type=float, default=60.0, metavar="SECONDS",
                        help="Hermes' approvals.timeout: an unanswered approval is BLOCKED after it "
                             "(default: %(default)s)")
    parser.add_argument("--max-concurrent-runs", type=int, default=10, metavar="N",
                        help="agent runs at once; more get 429 (default: %(default)s)")
    parser.add_argument("--framing", choices=("chunked", "close"), default="chunked",
                        help="how response bodies end (default: %(default)s)")
    parser.add_argument("--token-delay", type=float, default=0.0, metavar="SECONDS",
                        help="wait before each streamed delta (default: %(default)s)")
    parser.add_argument("--verbose", action="store_true", help="log every request on stderr")


def options_from(args: argparse.Namespace) -> EmulatorOptions:
    """The :class:`HermesEmulator` keyword arguments of parsed :func:`add_options` options."""
    return {
        "max_concurrent_runs": args.max_concurrent_runs,
        "framing": args.framing,
        "token_delay": args.token_delay,
        "verbose": args.verbose,
        "toolsets": DEFAULT_TOOLSETS if args.tools else (),
        "approval_mode": args.approval_mode,
        "approval_timeout": args.approval_timeout,
        "server_version": args.server_version,
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m hermes_sdk.testing``: serve an emulator until interrupted; returns the exit code."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m hermes_sdk.testing",
        description="Run the Hermes emulator on loopback.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8642, help="port to listen on (default: %(default)s)")
    parser.add_argument("--api-key", default="test-key", help="the key clients must send (default: %(default)s)")
    add_options(parser)
    args = parser.parse_args(argv)
    print(f"Hermes emulator (API key {args.api_key!r}); Ctrl-C to stop", file=sys.stderr)
    serve(args.host, args.port, args.api_key, **options_from(args))
    return 0


__all__ = ["TOOLSETS", "HermesEmulator", "Reply", "RequestInfo", "add_options", "main", "options_from", "serve"]
