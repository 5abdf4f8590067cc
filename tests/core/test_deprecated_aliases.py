"""The client's former flat methods still work for this release, and say what to call instead."""

from __future__ import annotations

import pytest

from hermes_sdk import HermesClient, RunStatus
from hermes_sdk.testing import HermesEmulator


def test_the_flat_run_and_record_methods_warn_and_still_work(hermes_emulator: HermesEmulator) -> None:
    with hermes_emulator.client(load_entrypoints=False) as client:
        run = client.run("hello", idempotency_key="k-alias")
        run.wait(timeout=10)
        with pytest.warns(DeprecationWarning, match=r"use client\.runs\.get\(\)"):
            status = client.run_get(run.id)
        assert isinstance(status, RunStatus) and status.status == "completed"
        with pytest.warns(DeprecationWarning, match=r"use client\.runs\.approval_request\(\)"):
            request = client.run_approval_request(run.id, "ls")
        assert request.capability_id.endswith(":run_approval")
        cap = "cap:hermes_agent:default:run_start"
        with pytest.warns(DeprecationWarning, match=r"use client\.records\.get\(\)"):
            record = client.idempotency_record(cap, "k-alias")
        assert record is not None and record.state == "completed"
        with pytest.warns(DeprecationWarning, match=r"use client\.records\.forget\(\)"):
            assert client.forget_idempotency_key(cap, "k-alias") is True
        assert client.records.get(cap, "k-alias") is None


def test_the_resources_are_plain_attributes() -> None:
    client = HermesClient("http://127.0.0.1:9", "k", load_entrypoints=False)
    assert client.runs.get.__doc__ and client.records.action_result.__doc__
    assert client.with_options(timeout=3).runs is not client.runs  # a copy has its own, over the same pool
    client.close()
