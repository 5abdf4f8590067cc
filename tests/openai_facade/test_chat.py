"""chat.completions.create through the facade: openai's own types, openai's client class, keys."""

from __future__ import annotations

import threading
from typing import Any
from unittest import mock

import pytest

openai = pytest.importorskip("openai")

from openai_support import user  # noqa: E402

import hermes_sdk  # noqa: E402
from hermes_sdk.openai import OpenAI, call_options  # noqa: E402


def test_the_client_is_an_openai_client_and_results_are_openai_types(facade: Any, emu: Any) -> None:
    assert isinstance(facade, openai.OpenAI)
    completion = facade.chat.completions.create(model="hermes-agent", messages=user("hello"))
    assert isinstance(completion, openai.types.chat.ChatCompletion)
    assert completion.choices[0].message.content == "ECHO: hello"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None and completion.usage.total_tokens > 0
    assert emu.executions == 1


def test_results_dump_as_plain_openai_dumps_them(facade: Any, make_plain: Any, emu: Any) -> None:
    emu.script("the same words", "the same words")
    ours = facade.chat.completions.create(model="hermes-agent", messages=user("hello"))
    theirs = make_plain().chat.completions.create(model="hermes-agent", messages=user("hello"))
    drop = {"id", "created"}
    dump_ours = {k: v for k, v in ours.model_dump().items() if k not in drop}
    dump_theirs = {k: v for k, v in theirs.model_dump().items() if k not in drop}
    assert dump_ours == dump_theirs
    assert set(ours.model_dump_json()) and ours.to_dict()["choices"][0]["message"]["content"] == "the same words"


def test_the_body_hermes_receives_is_the_one_openai_built(facade: Any, emu: Any) -> None:
    facade.chat.completions.create(model="hermes-agent", messages=user("fields"), temperature=0.2, max_tokens=50,
                                   seed=7, user="u-1", extra_body={"top_k": 5})
    body = emu.requests_seen[-1].body
    assert body["temperature"] == 0.2 and body["max_tokens"] == 50 and body["seed"] == 7
    assert body["user"] == "u-1" and body["top_k"] == 5 and body["stream"] is False


def test_a_session_header_travels_and_comes_back_on_the_raw_response(facade: Any, emu: Any) -> None:
    raw = facade.chat.completions.with_raw_response.create(
        model="hermes-agent", messages=user("remember 7"), extra_headers={"X-Hermes-Session-Id": "sess-openai-1"})
    assert raw.headers["x-hermes-session-id"] == "sess-openai-1"
    assert raw.headers["x-hermes-sdk-action-id"].startswith("act_")
    assert raw.parse().choices[0].message.content == "ECHO: remember 7"
    assert emu.requests_seen[-1].header("X-Hermes-Session-Id") == "sess-openai-1"


def test_one_execution_per_idempotency_key_in_extra_headers(facade: Any, emu: Any) -> None:
    first = facade.chat.completions.with_raw_response.create(
        model="hermes-agent", messages=user("once"), extra_headers={"Idempotency-Key": "order-7"})
    second = facade.chat.completions.with_raw_response.create(
        model="hermes-agent", messages=user("once"), extra_headers={"Idempotency-Key": "order-7"})
    assert emu.executions == 1
    assert first.headers["x-hermes-sdk-replayed"] == "false" and second.headers["x-hermes-sdk-replayed"] == "true"
    assert second.parse().choices[0].message.content == "ECHO: once"
    assert emu.requests_seen[-1].header("Idempotency-Key") == "order-7"


def test_one_execution_per_key_across_two_clients_sharing_a_sqlite_store(make_facade: Any, emu: Any,
                                                                          tmp_path: Any) -> None:
    store = f"sqlite:///{tmp_path}/keys.db"
    for client in (make_facade(idempotency_store=store), make_facade(idempotency_store=store)):
        reply = client.chat.completions.create(model="hermes-agent", messages=user("durable"),
                                               extra_headers={"Idempotency-Key": "shared-1"})
        assert reply.choices[0].message.content == "ECHO: durable"
    assert emu.executions == 1


def test_call_options_reach_a_call_made_inside_a_framework(facade: Any, emu: Any) -> None:
    def framework_step(client: Any) -> str:  # code the app cannot edit
        return client.chat.completions.create(model="hermes-agent", messages=user("inside")).choices[0].message.content

    with call_options(idempotency_key="framework-1"):
        assert framework_step(facade) == "ECHO: inside"
        assert framework_step(facade) == "ECHO: inside"
    assert emu.executions == 1


def test_a_key_in_the_header_and_another_in_call_options_is_refused_unsent(facade: Any, emu: Any) -> None:
    with call_options(idempotency_key="a"), pytest.raises(openai.BadRequestError) as caught:
        facade.chat.completions.create(model="hermes-agent", messages=user("x"), extra_headers={"Idempotency-Key": "b"})
    assert isinstance(caught.value, hermes_sdk.InvalidInputError)
    assert caught.value.details["sent"] is False and emu.requests_seen == []


def test_an_agent_failure_is_returned_with_hermes_state(facade: Any) -> None:
    completion = facade.chat.completions.create(model="hermes-agent", messages=user("FAIL500 please"))
    assert completion.choices[0].finish_reason == "error"
    extra = completion.model_extra if hasattr(completion, "model_extra") else completion.__dict__
    assert extra["hermes"]["failed"] is True


def test_instance_and_class_level_patches_still_intercept(facade: Any, emu: Any) -> None:
    fake = openai.types.chat.ChatCompletion.construct(id="x", choices=[], created=0, model="m",
                                                      object="chat.completion")
    with mock.patch.object(facade.chat.completions, "create", return_value=fake) as create:
        assert facade.chat.completions.create(model="m", messages=user("mocked")) is fake
    assert create.call_args.kwargs["messages"] == user("mocked")
    with mock.patch("openai.resources.chat.completions.Completions.create", return_value=fake) as create:
        assert facade.chat.completions.create(model="m", messages=user("mocked")) is fake
    assert create.called and emu.requests_seen == []


def test_copies_share_the_hermes_client_and_keep_the_class(facade: Any) -> None:
    copy = facade.with_options(timeout=30, max_retries=5)
    assert type(copy) is OpenAI and copy.hermes is facade.hermes and copy.max_retries == 5
    later = facade.with_options(deadline=lambda: None)
    assert type(later) is OpenAI and later.hermes is facade.hermes
    assert later.chat.completions.create(model="hermes-agent", messages=user("copy")).choices[0].message.content


def test_base_url_is_taken_as_apps_write_it(emu: Any) -> None:
    for url in (emu.base_url + "/v1", emu.base_url + "/v1/"):
        with OpenAI(base_url=url, api_key=emu.api_key, load_entrypoints=False) as client:
            assert client.models.list().data[0].id == "hermes-agent"
    for url, words in ((emu.base_url, "must end in /v1"), (emu.base_url + "/hermes/v1", "path prefix")):
        with pytest.raises(hermes_sdk.InvalidInputError, match=words):
            OpenAI(base_url=url, api_key=emu.api_key)


def test_http_client_and_a_default_idempotency_key_are_refused(emu: Any) -> None:
    with pytest.raises(hermes_sdk.InvalidInputError, match="session="):
        OpenAI(base_url=emu.base_url + "/v1", api_key="k", http_client=openai.DefaultHttpxClient())
    with pytest.raises(hermes_sdk.InvalidInputError, match="Idempotency-Key"):
        OpenAI(base_url=emu.base_url + "/v1", api_key="k", default_headers={"Idempotency-Key": "k"})


def test_openai_environment_variables_configure_it(emu: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", emu.base_url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", emu.api_key)
    with OpenAI(load_entrypoints=False) as client:
        assert client.chat.completions.create(model="hermes-agent", messages=user("env")).choices[0].message.content


def test_models_list_and_retrieve(facade: Any) -> None:
    assert [m.id for m in facade.models.list()] == ["hermes-agent"]
    assert facade.models.retrieve("hermes-agent").id == "hermes-agent"
    with pytest.raises(openai.NotFoundError):
        facade.models.retrieve("gpt-4")


def test_the_client_is_safe_to_share_between_threads(facade: Any, emu: Any) -> None:
    barrier = threading.Barrier(4)
    texts: list[str] = []

    def worker(n: int) -> None:
        barrier.wait()
        reply = facade.chat.completions.create(model="hermes-agent", messages=user(f"thread {n}"))
        texts.append(reply.choices[0].message.content)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(texts) == [f"ECHO: thread {n}" for n in range(4)] and emu.executions == 4


def test_one_execution_per_key_across_two_processes_sharing_a_sqlite_store(emu: Any, tmp_path: Any) -> None:
    import subprocess
    import sys

    code = (
        "from hermes_sdk.openai import OpenAI\n"
        f"c = OpenAI(base_url={emu.base_url + '/v1'!r}, api_key={emu.api_key!r}, load_entrypoints=False,\n"
        f"           idempotency_store={'sqlite:///' + str(tmp_path / 'keys.db')!r})\n"
        "r = c.chat.completions.create(model='hermes-agent', messages=[{'role': 'user', 'content': 'two procs'}],\n"
        "                              extra_headers={'Idempotency-Key': 'proc-key-1'})\n"
        "print(r.choices[0].message.content)\n"
    )
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip() == "ECHO: two procs"
    assert emu.executions == 1


def test_plugins_see_every_facade_call_redacted(make_facade: Any) -> None:
    from hermes_sdk import hookimpl

    class Observer:
        def __init__(self) -> None:
            self.results: list[dict[str, Any]] = []
            self.events: list[dict[str, Any]] = []

        @hookimpl
        def hermes_call_result(self, call: Any, result: dict[str, Any]) -> None:
            self.results.append(result)

        @hookimpl
        def hermes_stream_event(self, call: Any, event: dict[str, Any]) -> None:
            self.events.append(event)

    observer = Observer()
    client = make_facade(plugins=[observer])
    client.chat.completions.create(model="hermes-agent", messages=user("secret plan alpha"))
    list(client.chat.completions.create(model="hermes-agent", messages=user("secret plan beta"), stream=True))
    assert [r["status"] for r in observer.results] == ["completed", "completed"] and observer.events
    assert "secret plan" not in repr(observer.results) + repr(observer.events)
