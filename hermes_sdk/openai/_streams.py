"""Hermes' SSE events as the frames openai's ``Stream`` parses, with the Hermes-only ones set aside.

Chat: only unnamed ``data:`` frames are chunks; named events (``hermes.tool.progress``,
``approval.request``) would parse as chunks with ``choices=None`` and break
``chunk.choices[0].delta.content``, so they go to the side channel. Responses: ``response.*``
events pass unchanged, except that a ``response.content_part.added`` Hermes never sends
(hermes-agent#119758) is inserted before the first text delta of a part, and its
``response.content_part.done`` before the item ends: openai's ``responses.stream()`` indexes by it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Callable

from hermes_sdk.errors import StreamError

__all__ = ["chat_frames", "replayed_frames", "responses_frames"]

Aside = Callable[[Any], None]


def _frame(data: str, name: Any = None) -> bytes:
    lines = "".join(f"data: {line}\n" for line in data.split("\n"))
    return (f"event: {name}\n{lines}\n" if name else f"{lines}\n").encode()


def chat_frames(hs: Any, aside: Aside) -> Iterator[bytes]:
    for event in hs:
        if event.event is not None:
            aside(event)
            continue
        data = event.data
        if isinstance(data, dict) and data.get("error"):
            # A failed agent run (Hermes' chunk with an ``error``): openai raises its APIError here;
            # the facade raises the dual one, after reading the stream to its end so that its
            # record says failed, not cancelled.
            hs.result()
            error = data["error"]
            message = error.get("message") if isinstance(error, dict) else None
            raise StreamError(str(message or "the chat stream reported an error"), uncertain_outcome=True,
                              details={"operation": "chat_stream", "provider_error": error})
        yield _frame(event.raw_data)


def responses_frames(hs: Any, aside: Aside) -> Iterator[bytes]:
    announced: set[tuple[Any, Any]] = set()
    synthesized: dict[tuple[Any, Any], Any] = {}  # our content_part.added, not yet done: the part's text
    for event in hs:
        name = event.event
        data = event.data
        if not (isinstance(name, str) and (name.startswith("response.") or name == "error")):
            if name is None and isinstance(data, dict) and str(data.get("type", "")).startswith("response."):
                name = data["type"]  # a frame without ``event:`` (some proxies drop it)
            else:
                aside(event)
                continue
        if isinstance(data, dict):
            key = (data.get("item_id"), data.get("content_index"))
            if name == "response.content_part.added":
                announced.add(key)
            elif name == "response.output_text.delta" and key not in announced:
                announced.add(key)
                synthesized[key] = ""
                added = _part_event("response.content_part.added", data, "")
                yield _frame(json.dumps(added), name="response.content_part.added")
            elif name == "response.output_text.done" and key in synthesized:
                synthesized[key] = data.get("text", "")
            elif name == "response.content_part.done":
                synthesized.pop(key, None)
            elif name == "response.output_item.done":
                item = data["item"] if isinstance(data.get("item"), dict) else {}
                for part_key in [k for k in synthesized if k[0] == item.get("id")]:
                    done = {"item_id": part_key[0], "content_index": part_key[1],
                            "output_index": data.get("output_index"), "sequence_number": data.get("sequence_number")}
                    part_done = _part_event("response.content_part.done", done, synthesized.pop(part_key))
                    yield _frame(json.dumps(part_done), name="response.content_part.done")
        yield _frame(event.raw_data, name=name)


def _part_event(kind: str, near: dict[str, Any], text: str) -> dict[str, Any]:
    return {"type": kind, "item_id": near.get("item_id"), "output_index": near.get("output_index", 0),
            "content_index": near.get("content_index", 0), "sequence_number": near.get("sequence_number", 0),
            "part": {"type": "output_text", "text": text, "annotations": []}}


def replayed_frames(hs: Any) -> Iterator[bytes]:
    """A stream answered from the idempotency record (nothing ran): its recorded outcome as frames."""
    result = hs.result()
    final = result.final if isinstance(result.final, dict) else {}
    if result.operation == "chat_stream":
        chunk = {k: final[k] for k in ("id", "object", "created", "model") if k in final}
        chunk.setdefault("id", hs.action_id or "chatcmpl-replayed")
        chunk.setdefault("object", "chat.completion.chunk")
        chunk.setdefault("created", 0)
        chunk.setdefault("model", "hermes-agent")
        delta = {"role": "assistant", "content": result.text}
        yield _frame(json.dumps({**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}))
        yield _frame(json.dumps({**chunk, "choices": [{"index": 0, "delta": {},
                                                       "finish_reason": result.finish_reason or "stop"}],
                                 **({"usage": result.usage} if result.usage else {})}))
        yield _frame("[DONE]")
        return
    envelope: dict[str, Any] = final["response"] if isinstance(final.get("response"), dict) else final
    yield _frame(json.dumps({"type": "response.created", "response": {**envelope, "status": "in_progress",
                                                                        "output": []}, "sequence_number": 0}),
                 name="response.created")
    yield _frame(json.dumps({"type": "response.completed", "response": envelope, "sequence_number": 1}),
                 name="response.completed")
