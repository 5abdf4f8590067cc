"""Which Hermes release the emulator plays: ``HermesEmulator(server_version="0.22.2")``.

The default, ``0.19.0``, is the baseline every transcript under ``hermes-wire/`` was taken from.
``0.20.1`` and ``0.22.2`` add what ``spec/hermes-next.md`` lists for them (``hermes-wire-next/``),
so an application's tests can cover the servers its users run:

- 0.20: approval requests carry ``request_id`` and ``allow_session`` (answers still oldest first);
  ``POST /v1/runs/{id}/steer`` and ``run.steered``; the 401 body ``gateway_auth_failed``; sessions'
  ``pinned``/``archived``/``hidden``; a session's messages paginated (the latest 500 without
  ``limit``); ``GET /api/model/options``;
- 0.21 and later (0.22.2): an approval answer resolves exactly its ``request_id`` (409 for a stale
  one); durable run idempotency (``replayed``, 409 for another body, 400 for a key that is not
  1-255 visible ASCII); numbered, resumable run events (``id:``, ``seq``, ``Last-Event-ID``);
  ``runtime``/``completed``/``partial``/``interrupted`` on terminal events; approvals on streamed
  chat completions (``event: approval.request``, answered at ``/v1/runs/{chatcmpl id}/approval``);
  ``/stop`` of a finished run answers its object (not 404); a job's bad schedule is a 400; a forked
  parent's messages are its own.
"""

from __future__ import annotations

import re

SERVER_VERSIONS = ("0.19.0", "0.20.1", "0.22.2")
#: What ``/health`` reports for a version (the 0.22 fork's own string).
REPORTED = {"0.22.2": "0.22.2.post1"}
_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)")


def version_tuple(version: str) -> tuple[int, int, int]:
    found = _VERSION.match(version)
    if found is None:
        raise ValueError(f"server_version must look like 0.19.0, got {version!r}")
    return int(found.group(1)), int(found.group(2)), int(found.group(3))


def check_version(version: str) -> str:
    """A supported server version, or ValueError."""
    if version not in SERVER_VERSIONS:
        raise ValueError(f"server_version must be one of {', '.join(SERVER_VERSIONS)}, got {version!r}")
    return version


class Behaviour:
    """The switches a version turns on (one per difference the emulator plays)."""

    def __init__(self, version: str) -> None:
        self.version = check_version(version)
        at = version_tuple(version)
        self.reported = REPORTED.get(version, version)
        v20, v21 = at >= (0, 20, 0), at >= (0, 21, 0)
        self.request_ids = v20  # approval.request carries request_id, allow_session
        self.steer = v20  # POST /v1/runs/{id}/steer, run.steered
        self.gateway_auth_401 = v20  # the 401 body names the gateway key
        self.session_flags = v20  # pinned / archived / hidden on session objects
        self.paginated_messages = v20  # GET .../messages: latest 500 without limit, "pagination"
        self.model_options = v20  # GET /api/model/options
        self.exact_approvals = v21  # request_id resolves exactly that request; stale: 409
        self.runs_idempotency = v21  # durable Idempotency-Key on POST /v1/runs
        self.event_ids = v21  # id:/seq on run events, Last-Event-ID resumes
        self.terminal_fields = v21  # runtime/completed/partial/interrupted on terminal events
        self.stream_approvals = v21  # approval.request on streamed chat completions
        self.job_refusals_400 = v21  # a bad schedule / nothing to run: 400, not 500
        self.fork_redirect = not v21  # a forked parent's messages are its newest child's (0.19, 0.20)


__all__ = ["SERVER_VERSIONS", "Behaviour", "check_version", "version_tuple"]
