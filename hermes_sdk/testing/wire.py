"""Wire-level constants and helpers shared by the emulator's handlers.

Everything here mirrors what Hermes 0.19.0's aiohttp server puts on the wire
(see ``spec/hermes-server.md``): JSON via ``json.dumps`` with default
separators, the security headers of the inner middleware, and the exact error
envelopes, which differ per call site (some have ``param``/``code``, some not).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import uuid

MAX_REQUEST_BYTES = 10_000_000
JSON_CONTENT_TYPE = "application/json; charset=utf-8"
TEXT_CONTENT_TYPE = "text/plain; charset=utf-8"
HERMES_VERSION = "0.19.0"
DEFAULT_MODEL = "hermes-agent"
SESSION_ID_MAX = 256

# Added by Hermes' security-header middleware to every JSON response that
# reaches it; SSE, the 413, the CORS 403 and aiohttp's 404/405 lack them.
SECURITY_HEADERS: tuple[tuple[str, str], ...] = (
    ("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'"),
    ("Permissions-Policy", "camera=(), microphone=(), geolocation=()"),
    ("Strict-Transport-Security", "max-age=31536000; includeSubDomains"),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("X-XSS-Protection", "0"),
    ("Referrer-Policy", "no-referrer"),
)

SSE_HEADERS: tuple[tuple[str, str], ...] = (
    ("Content-Type", "text/event-stream"),
    ("Cache-Control", "no-cache"),
    ("X-Accel-Buffering", "no"),
)

_TRUTHY = {"true", "1", "yes", "on"}
_FALSY = {"false", "0", "no", "off", ""}

Headers = list[tuple[str, str]]
JSONDict = dict[str, object]


def dumps(obj: object) -> bytes:
    """Serialise exactly like aiohttp's ``json_response`` (default separators)."""
    return json.dumps(obj).encode("utf-8")


def openai_error(
    message: str,
    *,
    err_type: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
) -> JSONDict:
    """Hermes' ``_openai_error`` envelope: always has ``param`` and ``code``."""
    return {"error": {"message": message, "type": err_type, "param": param, "code": code}}


def bare_error(message: str, err_type: str = "invalid_request_error") -> JSONDict:
    """The hand-built envelope some call sites use: no ``param`` or ``code``."""
    return {"error": {"message": message, "type": err_type}}


def auth_error(gateway: bool = False) -> JSONDict:
    """The 401 envelope Hermes sends for a missing or wrong Bearer key (``gateway``: 0.20+'s)."""
    if gateway:
        return {"error": {"message": "Invalid gateway API key (API_SERVER_KEY)", "type": "gateway_auth_error",
                          "code": "gateway_auth_failed"}}
    return {
        "error": {
            "message": "Invalid API key",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
    }


def parse_bool(value: object) -> bool:
    """Hermes accepts real booleans and a handful of strings for ``stream``."""
    if isinstance(value, bool):
        return value
    if value is None:
        return False
    if isinstance(value, (int, float)):
        return bool(value)
    text = str(value).strip().lower()
    if text in _TRUTHY:
        return True
    if text in _FALSY:
        return False
    return False


def chat_id() -> str:
    """A new chat completion id, shaped like Hermes' (``chatcmpl-`` and 29 hex digits)."""
    return "chatcmpl-" + secrets.token_hex(15)[:29]


def response_id() -> str:
    """A new response id, shaped like Hermes' (``resp_`` and 28 hex digits)."""
    return "resp_" + secrets.token_hex(14)


def message_item_id() -> str:
    """A new output message item id (``msg_`` and 24 hex digits)."""
    return "msg_" + secrets.token_hex(12)


def new_session_uuid() -> str:
    """A new random session id, for a Responses turn that continues no earlier one."""
    return str(uuid.uuid4())


def derive_chat_session_id(system_prompt: str, first_user_message: str) -> str:
    """Stateless chat sessions: stable across turns of the same conversation."""
    digest = hashlib.sha256((system_prompt + "\n" + first_user_message).encode("utf-8"))
    return "api-" + digest.hexdigest()[:16]


def fingerprint(body: JSONDict, keys: tuple[str, ...]) -> str:
    """Hermes hashes ``repr`` of the selected fields, so we do the same."""
    return hashlib.sha256(repr({k: body.get(k) for k in keys}).encode("utf-8")).hexdigest()


def session_id_problem(value: str) -> str | None:
    """Return the 400 message for a bad ``X-Hermes-Session-Id``, or None."""
    if any(ch in value for ch in ("\r", "\n", "\x00")):
        return "Invalid session ID"
    if len(value) > SESSION_ID_MAX:
        return "Session ID too long"
    if "/" in value or "\\" in value or ".." in value or value.strip() in ("", "."):
        return "Invalid session ID"
    return None


def word_count(text: str) -> int:
    """Whitespace-separated words, as the fake upstream LLM counts tokens."""
    return len(text.split())


class ContentError(Exception):
    """An invalid content part: Hermes answers 400 with this ``code`` and the part's ``param``."""

    def __init__(self, message: str, code: str = "unsupported_content_type") -> None:
        super().__init__(message)
        self.code = code


_TEXT_PART_TYPES = {"text", "input_text", "output_text"}
_IMAGE_PART_TYPES = {"image_url", "input_image"}
_FILE_PART_TYPES = {"file", "input_file"}
UNSUPPORTED_PART_MESSAGE = (
    "Inline image inputs are supported, but uploaded files and document inputs are not supported on this endpoint."
)
# Hermes' model here has no vision: the agent asks the auxiliary model to describe each image
# (the fake LLM echoes that request) and sends the description as text (run_agent.py L5339-5472).
VISION_PROMPT = (
    "Describe everything visible in this image in thorough detail. "
    "Include any text, code, UI, data, objects, people, layout, colors, "
    "and any other notable visual information."
)


def _image_url(part: dict[str, object]) -> str:
    """Validate an image part the way Hermes' ``_normalize_multimodal_content`` does."""
    ref = part.get("image_url")
    detail = part.get("detail")
    url = ref.get("url") if isinstance(ref, dict) else ref
    if isinstance(ref, dict):
        detail = ref.get("detail", detail)
    if not isinstance(url, str) or not url.strip():
        raise ContentError("Image parts must include a non-empty image URL.", "invalid_image_url")
    url = url.strip()
    lowered = url.lower()
    if lowered.startswith("data:"):
        if not lowered.startswith("data:image/") or "," not in url:
            raise ContentError(
                "Only image data URLs are supported. Non-image data payloads are not supported."
            )
    elif not lowered.startswith(("http://", "https://")):
        raise ContentError(
            "Image inputs must use http(s) URLs or data:image/... URLs.", "invalid_image_url"
        )
    if detail is not None and (not isinstance(detail, str) or not detail.strip()):
        raise ContentError("Image detail must be a non-empty string when provided.", "invalid_content_part")
    return url


# What Hermes' vision tool answers for an http(s) image URL when it cannot fetch it (offline,
# as on loopback): the emulator never fetches, so every URL image reads like this.
URL_IMAGE_UNAVAILABLE = (
    "There was a problem with the request and the image could not be analyzed. "
    "Error: blocked: unsafe or private URL"
)


def image_note(url: str, role: str = "user") -> str:
    """The text that stands in for an image, as Hermes' non-vision fallback writes it."""
    label = {"assistant": "assistant", "tool": "tool result"}.get(role, "user")
    if url.startswith("data:"):
        return f"[The {label} attached an image. Here's what it contains:\nECHO: {VISION_PROMPT}]"
    return (
        f"[The {label} attached an image. Here's what it contains:\n{URL_IMAGE_UNAVAILABLE}]"
        f"\n[If you need a closer look, use vision_analyze with image_url: {url}]"
    )


def content_text(content: object, role: str = "user") -> str:
    """Flatten string-or-parts content into the text the upstream model sees.

    Text parts are joined by newlines; with images, each image's description comes first,
    then the text, as Hermes' non-vision fallback builds it.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return str(content)
    texts: list[str] = []
    images: list[str] = []
    for part in content:
        if isinstance(part, str):
            if part:
                texts.append(part)
            continue
        if not isinstance(part, dict):
            continue  # Hermes ignores unknown scalars
        raw_type = part.get("type")
        ptype = str(raw_type or "").strip().lower()
        if ptype in _TEXT_PART_TYPES:
            text = part.get("text")
            if text is not None and str(text):
                texts.append(str(text))
        elif ptype in _IMAGE_PART_TYPES:
            images.append(_image_url(part))
        elif ptype in _FILE_PART_TYPES:
            raise ContentError(UNSUPPORTED_PART_MESSAGE)
        else:
            raise ContentError(
                f"Unsupported content part type {raw_type!r}. Only text and image_url/input_image parts are supported."
            )
    if not images:
        return "\n".join(texts)
    prefix = "\n\n".join(image_note(url, role) for url in images).strip()
    suffix = "\n".join(t.strip() for t in texts if t.strip()).strip()
    return f"{prefix}\n\n{suffix}" if suffix else prefix


def repair_turns(turns: list[dict[str, str]]) -> list[dict[str, str]]:
    """Hermes' ``repair_message_sequence`` before each model call: merge consecutive assistant
    turns (stripped, joined by a newline), then consecutive user turns (joined by a blank line)."""
    merged: list[dict[str, str]] = []
    for turn in turns:
        prev = merged[-1] if merged else None
        if prev is not None and prev["role"] == turn["role"] == "assistant":
            prev["content"] = "\n".join(p for p in (prev["content"].strip(), turn["content"].strip()) if p)
        elif prev is not None and prev["role"] == turn["role"] == "user":
            a, b = prev["content"], turn["content"]
            prev["content"] = f"{a}\n\n{b}" if a and b else (a or b)
        else:
            merged.append(dict(turn))
    return merged
