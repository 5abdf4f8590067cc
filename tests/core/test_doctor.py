"""``hermes-sdk doctor`` (issue 33): each failure on the wire has its own finding and exit code.

Real sockets on 127.0.0.1: the emulator, a TLS server with a self-signed certificate, a dead port,
a proxy that accepts and closes, a server that never answers.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import ssl
import stat
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from core_support import RawServer, free_port

from hermes_sdk._app._doctor_base import DoctorSettings
from hermes_sdk._app._doctor_server import _approvals, skew_finding
from hermes_sdk._app.cli import main
from hermes_sdk._app.doctor import EXIT_CODES, diagnose, exit_code
from hermes_sdk._core.server_features import ServerFeatures
from hermes_sdk.testing import HermesEmulator
from hermes_sdk.testing.emulator import TOOLSETS

NAMES = ["config", "dns", "tcp", "tls", "proxy", "health", "features", "auth", "approvals", "clock",
         "idempotency_store", "plugins"]
CLEARED = ("HERMES_BASE_URL", "HERMES_API_KEY", "HERMES_ENDPOINT_ID", "HERMES_SDK_IDEMPOTENCY_STORE",
           "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE")
PROXIES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in CLEARED:
        monkeypatch.delenv(name, raising=False)
    for name in PROXIES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    monkeypatch.setenv("HERMES_SDK_PLUGINS", "")  # installed entry points stay out of these runs


def doctor(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], dict[str, Any]]:
    """Run ``hermes-sdk doctor --json``: the exit code, the body and the findings by name."""
    code = main(["doctor", "--json", *argv])
    out, _ = capsys.readouterr()
    body = json.loads(out)
    assert body["exit_code"] == code
    assert [f["name"] for f in body["findings"]] == NAMES
    for finding in body["findings"]:
        assert set(finding) == {"name", "status", "detail", "fix", "data"}
        assert finding["status"] in ("ok", "warn", "fail", "skip")
        if finding["status"] in ("warn", "fail"):
            assert finding["fix"], finding
    return code, body, {f["name"]: f for f in body["findings"]}


def failed(found: dict[str, Any]) -> list[str]:
    return [name for name, f in found.items() if f["status"] == "fail"]


@pytest.mark.parametrize("version", ["0.19.0", "0.20.1", "0.22.2"])
def test_every_check_passes_against_the_emulator(version: str, capsys: pytest.CaptureFixture[str]) -> None:
    with HermesEmulator(api_key="doctor-key-0123456789", server_version=version, toolsets=TOOLSETS) as emu:
        code, body, found = doctor(capsys, "--base-url", emu.base_url, "--api-key", emu.api_key)
    assert code == 0 and [f["status"] for f in body["findings"]] == ["ok"] * len(NAMES), body
    assert "doctor-key-0123456789" not in json.dumps(body)
    assert found["config"]["data"]["key_source"] == "--api-key"
    assert found["config"]["data"]["base_url_source"] == "--base-url"
    assert found["health"]["data"]["version"].startswith(version)
    newer = version == "0.22.2"
    assert {k: found["features"]["data"][k] for k in ("stream_approvals", "resumable_run_events", "steer")} == \
        {"stream_approvals": newer, "resumable_run_events": newer, "steer": version != "0.19.0"}
    assert found["approvals"]["data"]["enabled_toolsets"] == list(TOOLSETS)
    assert abs(found["clock"]["data"]["skew_seconds"]) < 5
    assert "hermes_sdk.core" in [p["name"] for p in found["plugins"]["data"]["plugins"]]


def test_the_text_report_names_the_sources_and_never_the_key(capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    with HermesEmulator(api_key="doctor-secret-key-42") as emu:
        monkeypatch.setenv("HERMES_BASE_URL", emu.base_url)
        monkeypatch.setenv("HERMES_API_KEY", emu.api_key)
        code = main(["doctor"])
    out, err = capsys.readouterr()
    assert code == 0
    assert "doctor-secret-key-42" not in out + err
    assert "(from HERMES_BASE_URL); API key from HERMES_API_KEY (20 characters, sha256 " in out
    assert out.rstrip().endswith("all checks passed; exit 0")
    assert "no tools on this server" in out  # the emulator's default: no toolsets, so nothing asks


def test_a_wrong_key_is_an_auth_failure(capsys: pytest.CaptureFixture[str]) -> None:
    with HermesEmulator(api_key="the-right-key") as emu:
        code, body, found = doctor(capsys, "--base-url", emu.base_url, "--api-key", "a-wrong-key-9876")
    assert code == EXIT_CODES["auth"] == 9 and failed(found) == ["auth"]
    assert "refused the key from --api-key" in found["auth"]["detail"]
    assert found["auth"]["data"]["code"] == "invalid_api_key"
    assert "API_SERVER_KEY" in found["auth"]["fix"]
    assert found["health"]["status"] == "ok" and found["features"]["status"] == "skip"
    assert "a-wrong-key-9876" not in json.dumps(body)


def test_no_url_is_a_config_failure(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, found = doctor(capsys, "--api-key", "k")
    assert code == EXIT_CODES["config"] == 3 and failed(found) == ["config"]
    assert {found[n]["status"] for n in NAMES[1:10]} == {"skip"}
    assert found["plugins"]["status"] == "ok"  # the local checks run anyway


def test_a_dead_port_is_a_tcp_failure(capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()  # bound and closed: nothing listens
    code, _, found = doctor(capsys, "--base-url", f"http://127.0.0.1:{port}", "--api-key", "k")
    assert code == EXIT_CODES["tcp"] == 5 and failed(found) == ["tcp"]
    assert "refused" in found["tcp"]["detail"].lower() and "API_SERVER_PORT" in found["tcp"]["fix"]
    assert {found[n]["status"] for n in ("tls", "proxy", "health", "auth", "clock")} == {"skip"}


def test_an_unresolvable_host_is_a_dns_failure(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, found = doctor(capsys, "--base-url", "http://no-such-host.invalid:8642", "--api-key", "k",
                            "--timeout", "5")
    assert code == EXIT_CODES["dns"] == 4 and failed(found) == ["dns"]
    assert "no-such-host.invalid" in found["dns"]["detail"]


def test_a_proxy_that_drops_the_connection_is_a_proxy_failure(capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    def drop(sock: socket.socket, request: Any, server: RawServer) -> None:
        sock.close()

    proxy = RawServer(drop)
    proxy_url = proxy.base_url
    try:
        with HermesEmulator() as emu:
            monkeypatch.setenv("HTTP_PROXY", proxy_url.replace("http://", "http://ops:hunter2@"))
            server_url = emu.base_url
            code, body, found = doctor(capsys, "--base-url", server_url, "--api-key", emu.api_key)
    finally:
        proxy.close()
    assert code == EXIT_CODES["proxy"] == 7 and failed(found) == ["proxy"]
    assert "hunter2" not in json.dumps(body)
    assert found["proxy"]["data"]["source"] == "HTTP_PROXY"
    assert found["proxy"]["data"]["proxy"] == proxy_url.replace("http://", "http://***@")
    assert "closed the connection" in found["proxy"]["detail"] and "NO_PROXY" in found["proxy"]["fix"]
    assert found["tcp"]["detail"].startswith("connected to the proxy 127.0.0.1:")  # the host the SDK dials
    assert [r.method + " " + r.target for r in proxy.requests][-1] == f"GET {server_url}/health"
    assert found["health"]["status"] == "skip"


def test_no_proxy_covering_the_server_is_said(capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with HermesEmulator() as emu:
        code, _, found = doctor(capsys, "--base-url", emu.base_url, "--api-key", emu.api_key)
    assert code == 0 and "NO_PROXY covers it" in found["proxy"]["detail"]
    assert found["proxy"]["data"]["environment"] == {"HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1"}


# ---------------------------------------------------------------- TLS


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost, valid 30 days, signed by itself."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    try:
        from cryptography import x509  # noqa: F401 - only to choose the generator
    except ImportError:
        if shutil.which("openssl") is None:
            pytest.skip("neither the cryptography package nor the openssl command is available")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                        "-out", str(cert), "-days", "30", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                       check=True, capture_output=True, timeout=60)
        return cert, key
    return _with_cryptography(cert, key)


def _with_cryptography(cert: Path, key: Path) -> tuple[Path, Path]:
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    private = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    built = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(private.public_key())
             .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
             .not_valid_after(now + datetime.timedelta(days=30))
             .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                         x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                            critical=False)
             .sign(private, hashes.SHA256()))
    cert.write_bytes(built.public_bytes(serialization.Encoding.PEM))
    key.write_bytes(private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    return cert, key


class TLSServer:
    """Completes a TLS handshake with every client, then closes (it speaks no HTTP)."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(str(cert), str(key))
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.handshakes = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"https://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                conn.settimeout(5)
                with self.context.wrap_socket(conn, server_side=True):
                    self.handshakes += 1
            except (OSError, ssl.SSLError):
                conn.close()

    def close(self) -> None:
        self.sock.close()
        self.thread.join(5)


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[TLSServer, Path]]:
    cert, key = _self_signed(tmp_path)
    server = TLSServer(cert, key)
    try:
        yield server, cert
    finally:
        server.close()


def test_an_untrusted_certificate_is_a_tls_failure(tls_server: tuple[TLSServer, Path],
                                                   capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    server, cert = tls_server
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # what OpenSSL reads, and requests does not
    code, _, found = doctor(capsys, "--base-url", server.base_url, "--api-key", "k")
    assert code == EXIT_CODES["tls"] == 6 and failed(found) == ["tls"]
    tls = found["tls"]
    assert "not trusted" in tls["detail"] and "self" in tls["detail"].lower()  # "self-signed certificate"
    assert tls["data"]["ca_source"] == "certifi"
    assert tls["data"]["ssl_cert_file_ignored"] == str(cert)
    assert f"REQUESTS_CA_BUNDLE={cert}" in tls["fix"]
    assert found["health"]["status"] == "skip"


def test_a_trusted_bundle_shows_the_certificate(tls_server: tuple[TLSServer, Path],
                                                capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    server, cert = tls_server
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(cert))
    code, _, found = doctor(capsys, "--base-url", server.base_url, "--api-key", "k", "--timeout", "3")
    tls = found["tls"]
    assert tls["status"] == "ok", tls
    assert tls["data"]["ca_source"] == "REQUESTS_CA_BUNDLE" and tls["data"]["subject"] == "localhost"
    assert 28 <= tls["data"]["days_left"] <= 30
    # the server closes after the handshake: the next failure is the server's, with its own code
    assert code == EXIT_CODES["health"] == 8 and failed(found) == ["health"]


# ---------------------------------------------------------------- deadlines


def test_a_server_that_never_answers_is_bounded(capsys: pytest.CaptureFixture[str]) -> None:
    silent = socket.create_server(("127.0.0.1", 0))  # the kernel accepts; nobody reads or answers
    try:
        # The server never answers: only the 1 s bound can end the health step (else a hang).
        code, _, found = doctor(capsys, "--base-url", f"http://127.0.0.1:{silent.getsockname()[1]}",
                                "--api-key", "k", "--timeout", "1")
    finally:
        silent.close()
    assert code == EXIT_CODES["health"] and failed(found) == ["health"]


# ---------------------------------------------------------------- the idempotency store


def test_a_readable_sqlite_store_is_a_warning_and_is_left_as_found(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "keys"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    db = folder / "keys.db"
    sqlite3.connect(str(db)).close()
    os.chmod(db, 0o644)
    monkeypatch.setenv("HERMES_SDK_IDEMPOTENCY_STORE", f"sqlite:///{db}")
    with HermesEmulator() as emu:
        code, _, found = doctor(capsys, "--base-url", emu.base_url, "--api-key", emu.api_key)
    store = found["idempotency_store"]
    assert code == 0 and store["status"] == "warn"
    assert f"chmod 700 {folder}" in store["fix"] and f"chmod 600 {db}" in store["fix"]
    assert (stat.S_IMODE(folder.stat().st_mode), stat.S_IMODE(db.stat().st_mode)) == (0o755, 0o644)


def test_an_unreadable_store_is_a_store_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "keys.db"
    db.write_bytes(b"not a database, " * 100)
    os.chmod(db, 0o600)
    os.chmod(tmp_path, 0o700)
    monkeypatch.setenv("HERMES_SDK_IDEMPOTENCY_STORE", f"sqlite:///{db}")
    with HermesEmulator() as emu:
        code, _, found = doctor(capsys, "--base-url", emu.base_url, "--api-key", emu.api_key)
    assert code == EXIT_CODES["idempotency_store"] == 10 and failed(found) == ["idempotency_store"]
    assert "cannot be read" in found["idempotency_store"]["detail"]


def test_a_plugin_store_that_is_down_is_a_store_failure(capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("hermes_sdk_redis")
    monkeypatch.delenv("HERMES_SDK_PLUGINS")  # the redis plugin claims redis://
    monkeypatch.setenv("HERMES_SDK_IDEMPOTENCY_STORE", f"redis://:s3cret@127.0.0.1:{free_port()}/0")
    with HermesEmulator() as emu:
        code, body, found = doctor(capsys, "--base-url", emu.base_url, "--api-key", emu.api_key, "--timeout", "3")
    assert code == EXIT_CODES["idempotency_store"] and failed(found) == ["idempotency_store"]
    assert "not reachable" in found["idempotency_store"]["detail"] and "s3cret" not in json.dumps(body)


def test_the_cli_default_store_is_the_state_directory(capsys: pytest.CaptureFixture[str]) -> None:
    with HermesEmulator() as emu:
        main(["chat", "hi", "--base-url", emu.base_url, "--api-key", emu.api_key])  # opens the default store
        capsys.readouterr()
        code, _, found = doctor(capsys, "--base-url", emu.base_url, "--api-key", emu.api_key)
    store = found["idempotency_store"]
    assert code == 0 and store["status"] == "ok" and store["detail"].endswith("modes 0600/0700")
    assert store["data"]["path"] == str(Path(os.environ["XDG_STATE_HOME"], "hermes-sdk", "idempotency.db"))


# ---------------------------------------------------------------- approvals and the clock (the wire is not the point)


def test_a_release_that_runs_unattended_is_a_warning() -> None:
    with HermesEmulator(toolsets=TOOLSETS) as emu, emu.client(load_entrypoints=False) as client:
        found = _approvals(client, ServerFeatures("0.20.6", {"approval_events": True}))
        later = _approvals(client, ServerFeatures("0.22.2.post1", {"approval_events": True}))
    assert found.status == "warn" and "unattended" in found.detail and "#98728" in found.detail
    assert later.status == "ok" and "non-streamed chat and responses never ask" in later.detail


@pytest.mark.parametrize(("offset", "status"), [(0, "ok"), (-2, "ok"), (120, "warn"), (-3600, "warn")])
def test_clock_skew_against_the_date_header(offset: int, status: str) -> None:
    import email.utils

    now = time.time()
    finding = skew_finding(email.utils.formatdate(now + offset, usegmt=True), now - 0.05, now + 0.05)
    assert finding.status == status and abs(finding.data["skew_seconds"] - offset) <= 1  # type: ignore[operator]
    assert skew_finding(None, now, now).status == "warn"


def test_diagnose_is_a_library_function() -> None:
    with HermesEmulator(api_key="lib-key") as emu:
        findings = diagnose(DoctorSettings(emu.base_url, "argument", "lib-key", "argument", timeout=3))
    assert [f.name for f in findings] == NAMES and exit_code(findings) == 0


def test_a_bad_timeout_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["doctor", "--timeout", "0"])
    assert info.value.code == 2


def test_a_key_stored_with_keys_set_is_found_and_named(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # The doctor reads the key the way every other command does: flags, the environment, then the
    # key `hermes-sdk keys set` stored for the server.
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    secret = tmp_path / "key.txt"
    secret.write_text("doctor-stored-key-0123456789\n")
    with HermesEmulator(api_key="doctor-stored-key-0123456789") as emu:
        assert main(["keys", "set", "--endpoint", emu.base_url, "--file", str(secret)]) == 0
        capsys.readouterr()
        code, body, found = doctor(capsys, "--base-url", emu.base_url)
    assert code == 0, body
    assert found["config"]["data"]["key_source"].startswith("the key stored for ")
    assert found["auth"]["status"] == "ok"
    assert "doctor-stored-key-0123456789" not in json.dumps(body)
