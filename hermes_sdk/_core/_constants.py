"""Every default and limit in one place, so a reader can audit them at a glance."""

from __future__ import annotations

from .._version import __version__

CAPABILITY_PREFIX = "cap:hermes_agent:"
DEFAULT_ENDPOINT_ID = "default"
DEFAULT_MODEL = "hermes-agent"

# Timeouts (seconds) inside the connector, per the seed page.
MODEL_CALL_TIMEOUT = 300.0
STORED_CALL_TIMEOUT = 30.0
STREAM_TIMEOUT = 300.0
CONNECT_TIMEOUT = 10.0

# Limits.
MAX_REQUEST_BODY_BYTES = 10_000_000  # Hermes' aiohttp client_max_size
MAX_JSON_RESPONSE_BYTES = 16 * 1024 * 1024
MAX_ERROR_BODY_BYTES = 64 * 1024  # a non-2xx body is read this far at most (Hermes' are tiny JSON)
MAX_SSE_FRAME_BYTES = 1024 * 1024
MAX_STREAM_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_EVENTS = 4096
MAX_MAX_EVENTS = 100_000
MAX_SESSION_VALUE_CHARS = 256
MAX_PATH_ID_BYTES = 512  # any id sent as a path segment (the connector's rule)
MAX_RESPONSE_ID_BYTES = MAX_PATH_ID_BYTES
MAX_HEADER_VALUE_BYTES = 16 * 1024
MAX_API_KEY_BYTES = 16 * 1024
MAX_TENANT_ID_CHARS = 512
MAX_INPUT_DEPTH = 100  # nested objects/lists in an input; deeper is refused (decoders and hashing recurse)
MAX_SAFE_INTEGER = 2 ** 53 - 1  # the largest integer every JSON decoder reads exactly (sampling controls)
# A deadline is absolute epoch seconds: below this (2001-09-09) it is a relative number by mistake.
MIN_DEADLINE_EPOCH = 1_000_000_000.0
MAX_DEADLINE_EPOCH = 253_402_300_799.0  # 9999-12-31T23:59:59Z
MAX_ENDPOINT_ID_CHARS = 128

# Retry of the one retry-safe capability (response_get).
RETRY_MAX_ATTEMPTS = 3
RETRY_BASE_DELAY = 0.25
RETRY_MAX_DELAY = 4.0
RETRY_AFTER_CAP = 30.0  # seconds: a larger (or non-finite) Retry-After is reported as this

# Idempotency and approvals.
DELETE_KEY_TTL_SECONDS = 86_400.0
DEFAULT_KEY_RETENTION_SECONDS = 86_400.0
APPROVAL_TTL_SECONDS = 900.0

READ_CHUNK_BYTES = 65_536
# The package's one version (hermes_sdk._version, which setup.cfg reads): a request says which
# release sent it, so a server log or a cassette names the SDK that made it.
USER_AGENT = f"hermes-sdk/{__version__}"
