"""A test double's verdict reaches the test as the double raised it: a vcrpy replay miss, an
unmatched call under ``responses`` or requests-mock, a miss of the SDK's own cassette. Typed as a
transport or plugin failure it would hide what the test has to fix (docs/testing.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests

from hermes_sdk import HermesClient
from hermes_sdk.testing import CassetteMiss, use_cassette

BASE = "http://hermes.test:8642"
KEY = "test-key-0123456789"


def _chat() -> None:
    with HermesClient(base_url=BASE, api_key=KEY, load_entrypoints=False) as client:
        client.chat(prompt="not recorded")


def test_a_vcrpy_replay_miss_arrives_as_vcrpys_own_exception(tmp_path: Path) -> None:
    vcr = pytest.importorskip("vcr")
    from vcr.errors import CannotOverwriteExistingCassetteException

    cassette = tmp_path / "empty.yaml"
    cassette.write_text("interactions: []\nversion: 1\n")
    with vcr.VCR(record_mode="none").use_cassette(str(cassette)):
        with pytest.raises(CannotOverwriteExistingCassetteException):
            _chat()


def test_an_unmatched_call_under_responses_arrives_as_responses_raised_it() -> None:
    responses = pytest.importorskip("responses")
    with responses.RequestsMock(assert_all_requests_are_fired=False):
        with pytest.raises(requests.exceptions.ConnectionError, match="doesn't match any registered mock") as raised:
            _chat()
    assert type(raised.value) is requests.exceptions.ConnectionError  # not the SDK's TransportError


def test_an_unmatched_call_under_requests_mock_arrives_as_no_mock_address() -> None:
    requests_mock = pytest.importorskip("requests_mock")
    with requests_mock.Mocker():
        with pytest.raises(requests_mock.exceptions.NoMockAddress):
            _chat()


def test_a_miss_of_the_sdks_cassette_arrives_as_cassette_miss(tmp_path: Path) -> None:
    cassette = tmp_path / "empty.json"
    cassette.write_text('{"version": 1, "interactions": []}')
    with use_cassette(cassette), pytest.raises(CassetteMiss, match="holds no"):
        _chat()
