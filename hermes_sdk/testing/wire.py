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
from typing import Any

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
JSONDict = dict[str, Any]


def dumps(obj: Any) -> bytes:
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


def auth_error() -> JSONDict:
    return {
        "error": {
            "message": "Invalid API key",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
    }


def parse_bool(value: Any) -> bool:
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
    return "chatcmpl-" + secrets.token_hex(15)[:29]


def response_id() -> str:
    return "resp_" + secrets.token_hex(14)


def message_item_id() -> str:
    return "msg_" + secrets.token_hex(12)


def new_session_uuid() -> str:
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
    return len(text.split())


class ContentError(Exception):
    """An unsupported content part (400 ``unsupported_content_type``)."""


_TEXT_PART_TYPES = {"text", "input_text", "output_text"}
_IMAGE_PART_TYPES = {"image_url", "input_image"}
UNSUPPORTED_PART_MESSAGE = (
    "Inline image inputs are supported, but uploaded files and document inputs are not supported on this endpoint."
)


def content_text(content: Any) -> str:
    """Flatten string-or-parts content the way Hermes does (text parts joined by newlines)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts: list[str] = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
                continue
            if not isinstance(part, dict):
                continue
            ptype = part.get("type")
            if ptype in _TEXT_PART_TYPES:
                texts.append(str(part.get("text") or ""))
            elif ptype in _IMAGE_PART_TYPES:
                continue  # accepted, but the scripted model only reads text
            else:
                raise ContentError(UNSUPPORTED_PART_MESSAGE)
        return "\n".join(texts)
    return str(content)
