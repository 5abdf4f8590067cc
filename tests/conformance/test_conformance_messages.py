"""How Hermes shapes what the model sees: merged turns, failed turns in history, image parts.

No transcript shows these; each case was compared against the real server, and runs against both.
"""

from __future__ import annotations

import pytest
from conformance_helpers import FAIL400_TEXT, REMOTE_REJECTED, Target, assert_error, uniq

from hermes_sdk import BadRequestError

IMAGE = "data:image/png;base64,iVBORw0KGgo="
VISION_NOTE = (
    "[The user attached an image. Here's what it contains:\n"
    "ECHO: Describe everything visible in this image in thorough detail. Include any text, code, UI, data, "
    "objects, people, layout, colors, and any other notable visual information.]"
)


def test_back_to_back_user_turns_reach_the_model_as_one(server: Target) -> None:
    a, b, c = uniq("first"), uniq("second"), uniq("third")
    mark = server.mark()
    with server.client() as client:
        chat = client.chat(messages=[{"role": "user", "content": a}, {"role": "user", "content": b}])
        listed = client.responses(input=[a, b])
        history = client.responses(input=c, conversation_history=[{"role": "user", "content": a}])
    assert chat.text == f"ECHO: {a}\n\n{b}"
    assert listed.output_text == f"ECHO: {a}\n\n{b}"
    assert history.output_text == f"ECHO: {a}\n\n{c}"
    assert [call["roles"] for call in server.calls_since(mark)] == [["system", "user"]] * 3


def test_a_failed_turn_leaves_no_reply_so_it_joins_the_next_one(server: Target) -> None:
    with server.client() as client:
        failed = client.responses(input=uniq("FAIL400 first"))
        assert failed.output_text == FAIL400_TEXT  # non-streaming Responses report it as completed
        after = client.responses(input=uniq("next"), previous_response_id=failed.id)
        stream = client.responses_stream(input=uniq("FAIL400 streamed")).result()
        streamed_id = stream.events[-1].data["response"]["id"]
        after_stream = client.responses(input=uniq("next"), previous_response_id=streamed_id)
        sid = uniq("sess")
        client.chat(prompt=uniq("FAIL400 chat"), session_id=sid)
        after_chat = client.chat(prompt=uniq("next"), session_id=sid)
    # The model saw "FAIL400 ...\n\nnext ...", so the fake model failed again.
    assert after.output_text == FAIL400_TEXT
    assert stream.status == "completed" and after_stream.output_text == FAIL400_TEXT
    assert after_chat.text == FAIL400_TEXT


def test_a_completed_turn_keeps_its_reply(server: Target) -> None:
    first, second = uniq("one"), uniq("two")
    with server.client() as client:
        r = client.responses(input=first)
        assert client.responses(input=second, previous_response_id=r.id).output_text == f"ECHO: {second}"


def test_an_image_is_described_to_a_model_without_vision(server: Target) -> None:
    text = uniq("look")
    with server.client() as client:
        image = {"type": "image_url", "image_url": {"url": IMAGE}}
        chat = client.chat(messages=[{"role": "user", "content": [{"type": "text", "text": text}, image]}])
        only = client.chat(messages=[{"role": "user", "content": [image]}])
        resp = client.responses(input=[{"role": "user", "content": [{"type": "input_text", "text": text},
                                                                   {"type": "input_image", "image_url": IMAGE}]}])
    # Descriptions first, then the text, whatever the order of the parts.
    assert chat.text == f"ECHO: {VISION_NOTE}\n\n{text}"
    assert only.text == f"ECHO: {VISION_NOTE}"
    assert resp.output_text == f"ECHO: {VISION_NOTE}\n\n{text}"


@pytest.mark.parametrize("part, code, message", [
    ({"type": "image_url", "image_url": {"url": "ftp://host/x.png"}}, "invalid_image_url",
     "Image inputs must use http(s) URLs or data:image/... URLs."),
    ({"type": "image_url", "image_url": {}}, "invalid_image_url", "Image parts must include a non-empty image URL."),
    ({"type": "image_url", "image_url": {"url": "data:text/plain,abc"}}, "unsupported_content_type",
     "Only image data URLs are supported. Non-image data payloads are not supported."),
    ({"type": "image_url", "image_url": {"url": IMAGE, "detail": ""}}, "invalid_content_part",
     "Image detail must be a non-empty string when provided."),
])
def test_bad_image_parts_are_400_with_hermes_codes(server: Target, part: dict, code: str, message: str) -> None:
    with server.client() as client, pytest.raises(BadRequestError) as info:
        client.chat(messages=[{"role": "user", "content": [{"type": "text", "text": uniq("x")}, part]}])
    assert_error(info.value, code=REMOTE_REJECTED, category="permanent", http_status=400, uncertain=False)
    assert info.value.details["provider_error"] == {"type": "invalid_request_error", "code": code,
                                                    "param": "messages[0].content"}
    assert message in info.value.message


def test_a_bad_part_in_conversation_history_names_it(server: Target) -> None:
    with server.client() as client, pytest.raises(BadRequestError) as info:
        client.responses(input=uniq("x"), conversation_history=[{"role": "user", "content": [{"type": "audio"}]}])
    assert info.value.details["provider_error"] == {"type": "invalid_request_error",
                                                    "code": "unsupported_content_type",
                                                    "param": "conversation_history[0].content"}
