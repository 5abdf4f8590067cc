"""One client shared by 16 threads; and the published capability contracts."""

from __future__ import annotations

import json
import threading

from hermes_sdk import Endpoint, HermesClient

OPS = ("chat", "chat_stream", "responses", "responses_stream", "response_get", "response_delete")
RUN_OPS = ("run_start", "run_get", "run_events", "run_approval", "run_steer", "run_stop", "health", "models",
           "server_capabilities", "toolsets")
FAMILY_OPS = ("sessions_list", "session_create", "session_get", "session_patch", "session_delete", "session_messages",
              "session_fork", "session_chat", "session_chat_stream", "jobs_list", "job_create", "job_get",
              "job_update", "job_delete", "job_pause", "job_resume", "job_run", "health_detailed", "skills",
              "model_options", "operator")


def test_sixteen_threads_share_one_client(hermes_emulator_factory) -> None:
    # Sixteen runs may be in flight at once; Hermes' default cap of 10 would answer some with 429,
    # which is the cap working, not a threading bug. This test is about sharing one client.
    emu = hermes_emulator_factory(max_concurrent_runs=16)
    errors: list[BaseException] = []
    checks = []
    lock = threading.Lock()
    with emu.client(load_entrypoints=False) as c:
        rid = c.responses(input="shared").id
        barrier = threading.Barrier(16)

        def worker(n: int) -> None:
            try:
                barrier.wait(5)
                for i in range(6):
                    tag = f"t{n}-{i}"
                    kind = (n + i) % 4
                    if kind == 0:
                        out = c.chat(prompt=tag, session_id=f"sess-{tag}")
                        ok = out.text == f"ECHO: {tag}" and out.session_id == f"sess-{tag}"
                    elif kind == 1:
                        res = c.chat_stream(prompt=f"{tag} streamed words here").result()
                        ok = res.status == "completed" and res.text == f"ECHO: {tag} streamed words here"
                    elif kind == 2:
                        res = c.responses_stream(input=tag).result()
                        ok = res.status == "completed" and res.text == f"ECHO: {tag}"
                    else:
                        got = c.response_get(rid)
                        ok = got.id == rid and got.output_text == "ECHO: shared"
                    with lock:
                        checks.append((tag, ok))
            except BaseException as exc:  # noqa: BLE001 - reported below
                with lock:
                    errors.append(exc)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    assert errors == [], [(e, e.details, repr(e.__cause__ or e.__context__)) for e in errors]
    assert len(checks) == 96 and all(ok for _, ok in checks), [t for t, ok in checks if not ok]
    assert emu.executions == 1 + 72  # every model call ran exactly once
    assert emu.connections <= 32  # pooled, not one connection per call


def test_capabilities_contract(emu) -> None:
    eps = [Endpoint("alpha", emu.base_url, "secret-key-xyz"), Endpoint("beta", emu.base_url, "secret-key-xyz")]
    with HermesClient(endpoints=eps, load_entrypoints=False) as c:
        caps = c.capabilities()
    assert [d["capability_id"] for d in caps] == [f"cap:hermes_agent:{e}:{op}" for e in ("alpha", "beta")
                                                  for op in OPS + RUN_OPS + FAMILY_OPS]
    by = {d["operation"]: d for d in caps if d["endpoint_id"] == "alpha" and d["operation"] in OPS}
    for op, d in by.items():
        assert d["kind"] == "agent" and d["auth"] == {"scheme": "bearer", "source": "endpoint.api_key"}
        assert d["sla"]["max_queue_delay_ms"] == 10_000 and d["sla"]["availability_target"] == "99.9%"
        assert d["idempotency"]["key_scope"] == "capability"
        assert d["idempotency"]["collision_behavior"] == "return_original_result"
        assert d["compensation"]["kind"] == "rollback_not_supported" and d["transaction"] == "none"
        assert d["execution"]["supports_sync"] is True and d["execution"]["async_expected"] is False
        streaming = op.endswith("_stream")
        assert d["execution"]["supports_streaming"] is streaming
        assert d["execution"]["supports_async"] is streaming and d["execution"]["supports_cancel"] is streaming
        assert d["execution"]["streaming_expected"] is streaming
        assert d["provider_request"]["streaming"] is streaming
        if op in ("chat", "chat_stream", "responses", "responses_stream"):
            assert (d["risk"], d["stability"]) == ("medium", "stable")
            assert d["side_effects"] == ["read", "write", "send_message", "external_network"]
            assert d["data"] == {"classification": "confidential", "contains_pii": True, "redaction_required": True}
            assert d["sla"]["expected_latency_ms"] == (30_000 if streaming else 5_000)
            assert d["sla"]["timeout_ms"] == (300_000 if streaming else 60_000)
            assert d["provider_request"]["method"] == "POST"
            assert d["provider_request"]["path"] == ("/v1/chat/completions" if op.startswith("chat")
                                                     else "/v1/responses")
        if op != "response_get":
            assert d["retry"] == {"safety": "unsafe", "supports_retry": False}
        if op != "response_delete":
            assert d["approval"] == {"required": False}
            assert d["idempotency"]["requirement"] == "optional" and d["idempotency"]["ttl_ms"] is None
    get, delete = by["response_get"], by["response_delete"]
    assert (get["risk"], get["stability"]) == ("low", "experimental")
    assert get["retry"] == {"safety": "safe", "supports_retry": True}
    assert get["side_effects"] == ["read", "external_network"]
    assert get["data"]["classification"] == "confidential" and get["data"]["redaction_required"] is True
    assert get["provider_request"] == {"method": "GET", "path": "/v1/responses/{response_id}", "streaming": False}
    assert (delete["risk"], delete["stability"]) == ("high", "experimental")
    assert delete["approval"]["required"] is True and delete["approval"]["ttl_ms"] == 900_000
    assert set(delete["approval"]["evidence_requirements"]) == {"reason", "input_snapshot", "policy_decision"}
    assert delete["idempotency"]["requirement"] == "required" and delete["idempotency"]["ttl_ms"] == 86_400_000
    assert delete["side_effects"] == ["read", "delete", "external_network"]
    assert delete["data"] == {"classification": "restricted", "contains_pii": True, "redaction_required": True}
    assert delete["compensation"]["requires_approval"] is True
    assert delete["provider_request"]["method"] == "DELETE"
    for d in (get, delete):
        assert d["sla"]["expected_latency_ms"] == 5_000 and d["sla"]["timeout_ms"] == 60_000
    assert "secret-key-xyz" not in json.dumps(caps), "the API key never appears in a descriptor"
