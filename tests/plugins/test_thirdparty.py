"""An installed third-party plugin (tests/thirdparty_plugin), loaded through the entry-point group."""

from __future__ import annotations

import importlib.metadata
import json
import logging
import subprocess
import sys
from typing import Any

import pytest

from hermes_sdk import ApprovalRequiredError, HermesClient, InvalidInputError
from hermes_sdk._core import _plugin_manager as plugins

try:
    import hermes_demo_plugin
    from hermes_demo_plugin import SPANS, DemoStore
except ImportError:  # pragma: no cover - depends on the environment
    pytestmark = pytest.mark.skip(reason="the third-party test plugin is not installed: "
                                         "run `pip install -e tests/thirdparty_plugin`")
else:
    if not any(ep.name == "hermes-demo" for ep, _ in plugins._entry_points()):  # pragma: no cover
        pytestmark = pytest.mark.skip(reason="hermes-demo-plugin is importable but its entry point is not "
                                             "installed: run `pip install -e tests/thirdparty_plugin`")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HERMES_SDK_PLUGINS", raising=False)
    monkeypatch.delenv("HERMES_SDK_DISABLE_PLUGINS", raising=False)
    SPANS.clear()


def _client(emulator: Any, **kwargs: Any) -> HermesClient:
    return HermesClient(emulator.base_url, emulator.api_key, **kwargs)


def test_it_is_installed_with_its_entry_point() -> None:
    dist = importlib.metadata.distribution("hermes-demo-plugin")
    assert [ep.name for ep in dist.entry_points if ep.group == "hermes_sdk"] == ["hermes-demo"]
    out = subprocess.run([sys.executable, "-m", "hermes_sdk", "plugins"], capture_output=True, text=True, check=True,
                         timeout=60).stdout
    (demo,) = [d for d in json.loads(out) if d["name"] == "hermes-demo"]
    assert demo["distribution"] == "hermes-demo-plugin" and demo["builtin"] is False
    assert demo["hooks"] == ["hermes_approval_provider", "hermes_call", "hermes_http_attempt",
                             "hermes_idempotency_store", "hermes_redaction_filters"]
    assert hermes_demo_plugin.__file__


def test_end_to_end(hermes_emulator: Any, caplog: pytest.LogCaptureFixture) -> None:
    a = _client(hermes_emulator, idempotency_store="demo://team")
    b = _client(hermes_emulator, idempotency_store="demo://team")
    assert isinstance(a.idempotency_store, DemoStore) and a.idempotency_store is b.idempotency_store

    # store: a key used by one client replays in the other
    first = a.chat(prompt="hello", idempotency_key="tp-1")
    assert b.chat(prompt="hello", idempotency_key="tp-1").id == first.id
    assert hermes_emulator.executions == 1

    # tracer: spans around the invocation and the attempt, with redacted attributes only
    kinds = [s["kind"] for s in SPANS]
    assert kinds == ["attempt", "call", "call"]  # the replay is traced too, without an attempt
    assert SPANS[1]["attributes"]["capability_id"] == "cap:hermes_agent:default:chat"
    assert "replayed" not in SPANS[1]["attributes"] and SPANS[2]["attributes"]["replayed"] is True

    # approvals: the plugin's provider approves only its own marked reasons
    created = a.responses(input="doomed", store=True)
    with pytest.raises(ApprovalRequiredError):
        a.response_delete(created.id, idempotency_key="tp-del", reason="no marker")
    result = a.invoke("cap:hermes_agent:default:response_delete", {"response_id": created.id},
                      idempotency_key="tp-del", reason="demo-approve: retention job")
    assert result.status == "completed" and result.approval["approver"] == "demo-plugin"
    assert result.approval["policy_decision_id"] == "demo-policy-1"
    assert hermes_emulator.stored_response(created.id) is None

    # redaction: its filter applies to everything the SDK redacts and logs
    assert a.redactor.text("token demo-secret-123") == "token [DEMO-SECRET]"
    with caplog.at_level(logging.DEBUG, logger="hermes_sdk"):
        logging.getLogger("hermes_sdk").debug("saw %s", "demo-secret-999")
    assert "demo-secret-999" not in caplog.text
    a.close()
    b.close()


def test_it_can_be_left_out(hermes_emulator: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidInputError):
        _client(hermes_emulator, idempotency_store="demo://x", load_entrypoints=False)
    monkeypatch.setenv("HERMES_SDK_DISABLE_PLUGINS", "hermes-demo")
    with pytest.raises(InvalidInputError):
        _client(hermes_emulator, idempotency_store="demo://x")
    monkeypatch.delenv("HERMES_SDK_DISABLE_PLUGINS")
    monkeypatch.setenv("HERMES_SDK_PLUGINS", "")
    with pytest.raises(InvalidInputError):
        _client(hermes_emulator, idempotency_store="demo://x")
    monkeypatch.setenv("HERMES_SDK_PLUGINS", "hermes-demo")
    assert isinstance(_client(hermes_emulator, idempotency_store="demo://x").idempotency_store, DemoStore)
