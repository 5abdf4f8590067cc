"""A small application, written the way a user of hermes-sdk would write one.

It summarises incident notes with Hermes, streams a status update to a callback, and archives a
summary as a stored Responses object. Its tests (test_incident_app.py) use only the
``hermes_emulator`` pytest fixture that hermes-sdk installs.
"""

from __future__ import annotations

from typing import Callable

from hermes_sdk import HermesClient

SYSTEM = "Answer with a short operational summary."


class IncompleteSummary(Exception):
    """Hermes answered, but the run did not finish cleanly; a person should look."""


class IncidentDesk:
    def __init__(self, client: HermesClient) -> None:
        self.client = client

    def summarize(self, incident_id: str, notes: str) -> str:
        # One key per incident: a retry after a crash or a double click never runs the model twice.
        reply = self.client.chat(
            messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": notes}],
            session_id=f"incident-{incident_id}",
            idempotency_key=f"incident-summary-{incident_id}",
        )
        if not reply.completed:
            raise IncompleteSummary(f"summary for {incident_id} ended with {reply.finish_reason}")
        return reply.text or ""

    def stream_update(self, notes: str, on_piece: Callable[[str], None]) -> str:
        with self.client.chat_stream(prompt=notes) as stream:
            for piece in stream.text_deltas():
                on_piece(piece)
        result = stream.result()
        if result.status != "completed":
            raise IncompleteSummary(f"stream ended {result.status}")
        return result.text

    def archive(self, notes: str) -> str:
        response = self.client.responses(input=notes, instructions=SYSTEM, store=True)
        return response.id

    def read_archive(self, response_id: str) -> str:
        return self.client.response_get(response_id).output_text
