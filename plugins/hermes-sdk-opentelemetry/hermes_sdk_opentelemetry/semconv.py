"""The names this plugin emits, in one place, and the ``OTEL_SEMCONV_STABILITY_OPT_IN`` switch.

GenAI conventions: OpenTelemetry semantic conventions **v1.37.0** (``gen_ai.provider.name``). The
transition plan of the GenAI conventions asks instrumentations that already emitted v1.36.0 or
earlier to keep that by default and emit the latest only with
``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``; this plugin emitted no GenAI
conventions before 0.2.0, so it emits the latest by default, and that opt-in changes nothing. A
backend that only knows v1.36.0 (``gen_ai.system``, no ``gen_ai.output.messages``) can ask for it
with the plugin's ``gen_ai_conventions="1.36.0"``. HTTP client spans follow the stable HTTP
conventions (this plugin never emitted the old experimental HTTP names, so ``http`` and
``http/dup`` change nothing).
"""

from __future__ import annotations

import os
from typing import Optional

GEN_AI_LATEST = "gen_ai_latest_experimental"
DEFAULT_VERSION = "1.36.0"  # on request only (gen_ai_conventions="1.36.0")
LATEST_VERSION = "1.37.0"

PROVIDER = "hermes"  # gen_ai.provider.name / gen_ai.system: a custom value (not on the well-known list)

# gen_ai.*
OPERATION_NAME = "gen_ai.operation.name"
PROVIDER_NAME = "gen_ai.provider.name"  # v1.37.0
SYSTEM = "gen_ai.system"  # v1.36.0 and earlier
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
REQUEST_TEMPERATURE = "gen_ai.request.temperature"
REQUEST_TOP_P = "gen_ai.request.top_p"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CONVERSATION_ID = "gen_ai.conversation.id"
OUTPUT_MESSAGES = "gen_ai.output.messages"
TOKEN_TYPE = "gen_ai.token.type"
TOOL_NAME = "gen_ai.tool.name"
AGENT_NAME = "gen_ai.agent.name"

OP_CHAT = "chat"
OP_INVOKE_AGENT = "invoke_agent"
OP_EXECUTE_TOOL = "execute_tool"

# General / HTTP (stable)
ERROR_TYPE = "error.type"
ERROR_OTHER = "_OTHER"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
HTTP_REQUEST_METHOD = "http.request.method"
HTTP_RESPONSE_STATUS_CODE = "http.response.status_code"
HTTP_REQUEST_RESEND_COUNT = "http.request.resend_count"
URL_TEMPLATE = "url.template"
KNOWN_METHODS = frozenset({"CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE", "QUERY"})

# Metrics
METRIC_OPERATION_DURATION = "gen_ai.client.operation.duration"
METRIC_TOKEN_USAGE = "gen_ai.client.token.usage"
METRIC_TIME_TO_FIRST_CHUNK = "gen_ai.client.operation.time_to_first_chunk"
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)

# The SDK's own attributes, outside the conventions.
H_OPERATION = "hermes.operation"
H_CAPABILITY_ID = "hermes.capability_id"
H_ENDPOINT_ID = "hermes.endpoint_id"
H_STATUS = "hermes.status"
H_ATTEMPTS = "hermes.attempts"
H_REPLAYED = "hermes.replayed"
H_UNCERTAIN = "hermes.uncertain_outcome"
H_RETRYABLE = "hermes.retryable"
H_IDEMPOTENCY = "hermes.idempotency.outcome"  # none | executed | replayed
H_APPROVAL_DECISION = "hermes.approval.decision"
H_APPROVAL_PATTERN_KEY = "hermes.approval.pattern_key"
H_APPROVAL_COMMAND = "hermes.approval.command"
H_APPROVAL_ALLOW_PERMANENT = "hermes.approval.allow_permanent"
H_TOOL_DURATION = "hermes.tool.duration"
EVENT_APPROVAL_REQUESTED = "hermes.approval.requested"
EVENT_APPROVAL_RESPONDED = "hermes.approval.responded"

ENV_OPT_IN = "OTEL_SEMCONV_STABILITY_OPT_IN"
ENV_CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
ENV_RECORD_IDS = "HERMES_SDK_OTEL_RECORD_IDENTIFIERS"


def latest_gen_ai(opt_in: Optional[str] = None, conventions: Optional[str] = None) -> bool:
    """Whether to emit the latest GenAI conventions: yes, unless ``conventions`` asks for v1.36.0
    and the comma-separated opt-in list (``OTEL_SEMCONV_STABILITY_OPT_IN`` unless given) does not
    hold ``gen_ai_latest_experimental``."""
    if conventions is None or conventions in ("latest", LATEST_VERSION):
        return True
    if conventions != DEFAULT_VERSION:
        raise ValueError(f"gen_ai_conventions must be {LATEST_VERSION!r} (or 'latest') or {DEFAULT_VERSION!r}")
    value = os.environ.get(ENV_OPT_IN, "") if opt_in is None else opt_in
    return GEN_AI_LATEST in {part.strip() for part in value.split(",")}


def flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def schema_url(latest: bool) -> str:
    return "https://opentelemetry.io/schemas/" + (LATEST_VERSION if latest else DEFAULT_VERSION)
