"""The provider's Idempotency-Key cache: transcripts 17 (chat) and 18 (responses).

The SDK keeps its own per-client idempotency record and would replay a repeated key without
sending anything; a fresh client per call makes every call reach the server, so these tests
observe the SERVER's cache (keyed by the header alone, fingerprinting selected body fields).
"""

from __future__ import annotations

import uuid

from conformance_helpers import CHAT_ID, RESP_ID, UUID4, Target, uniq


def _key() -> str:
    return f"idem-{uuid.uuid4().hex}"


def test_17_chat_idempotency_cache(server: Target) -> None:
    key, prompt = _key(), uniq("idempotent hello")

    def call(**fields: object) -> tuple[object, int]:
        mark = server.mark()
        with server.client() as client:  # a fresh SDK record: the request always goes out
            done = client.chat(idempotency_key=key, **fields)
        return done, len(server.calls_since(mark))

    first, n1 = call(prompt=prompt)
    hit, n2 = call(prompt=prompt)  # same key + same body: the cached agent result
    other, n3 = call(prompt="different body")  # same key, new fingerprint: recomputed, slot overwritten
    again, n4 = call(prompt=prompt)  # the original body again: recomputed
    extra, n5 = call(prompt=prompt, temperature=0.1)  # temperature is not fingerprinted: cached
    assert (n1, n2, n3, n4, n5) == (1, 0, 1, 1, 0)
    texts = [d.text for d in (first, hit, other, again, extra)]  # type: ignore[attr-defined]
    assert texts == [f"ECHO: {prompt}"] * 2 + ["ECHO: different body"] + [f"ECHO: {prompt}"] * 2
    ids = [d.id for d in (first, hit, other, again, extra)]  # type: ignore[attr-defined]
    assert len(set(ids)) == 5 and all(CHAT_ID.match(i) for i in ids)  # the response is rebuilt
    sids = [d.session_id for d in (first, hit, again, extra)]  # type: ignore[attr-defined]
    assert len(set(sids)) == 1 and other.session_id != first.session_id  # type: ignore[attr-defined]


def test_17_streams_ignore_the_key(server: Target) -> None:
    key, prompt = _key(), uniq("idempotent stream")
    counts = []
    for _ in range(2):
        mark = server.mark()
        with server.client() as client:
            result = client.chat_stream(prompt=prompt, idempotency_key=key).result()
        assert result.status == "completed"
        counts.append(len(server.calls_since(mark)))
    assert counts == [1, 1]


def test_18_responses_idempotency_cache(server: Target) -> None:
    key, prompt = _key(), uniq("idem resp")
    results, counts = [], []
    for _ in range(2):
        mark = server.mark()
        with server.client() as client:
            results.append(client.responses(input=prompt, idempotency_key=key))
        counts.append(len(server.calls_since(mark)))
    first, hit = results
    assert counts == [1, 0]
    assert first.output == hit.output and hit.output_text == f"ECHO: {prompt}"
    # A hit mints a NEW response id, stores it again, and starts a new session.
    assert first.id != hit.id and RESP_ID.match(hit.id)
    assert UUID4.match(hit.session_id or "") and hit.session_id != first.session_id
    with server.client() as client:
        assert client.response_get(hit.id).raw == hit.raw
        assert client.response_get(first.id).raw == first.raw
    # A different fingerprint under the same key executes again.
    mark = server.mark()
    with server.client() as client:
        changed = client.responses(input=prompt, instructions="Be brief.", idempotency_key=key)
    assert len(server.calls_since(mark)) == 1 and changed.output_text == f"ECHO: {prompt}"


def test_18_sdk_replays_its_own_record_without_sending(server: Target) -> None:
    key, prompt = _key(), uniq("sdk replay")
    with server.client() as client:
        first = client.responses(input=prompt, idempotency_key=key)
        mark = server.mark()
        replay = client.responses(input=prompt, idempotency_key=key)
        record = client.action_result(client.records.get(
            "cap:hermes_agent:default:responses", key).action_id)  # type: ignore[union-attr]
    assert server.calls_since(mark) == []
    assert replay.id == first.id and replay.raw == first.raw  # the SDK's record, not the server's cache
    assert record is not None and record.status == "completed"
