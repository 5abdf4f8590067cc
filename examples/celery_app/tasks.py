"""Celery tasks that call Hermes without ever running a model call twice.

The three tools, and which one a task uses when:

* **the idempotency key** makes the call itself safe to repeat: it is derived from the business
  intent (``order-summary-<order id>``), not from anything a redelivery changes, so a task that
  runs again (a retry, ``acks_late`` redelivery after a worker died, a duplicate enqueue) replays
  the recorded result instead of calling the model. The store must outlive the worker and be
  shared by every worker: ``HERMES_SDK_IDEMPOTENCY_STORE=sqlite:////var/lib/app/hermes.db``
  on one host, ``redis://...`` (the hermes-sdk-redis plugin) across hosts;
* **task retry** (``self.retry``) only where nothing ran: the request never left the process
  (``details["sent"] is False``, the key was given back), Hermes refused before any agent work
  (``details["before_agent_work"]``: the key was given back too),
  or another worker still holds the key (``OutcomeUnknownError``: the retry replays its result
  once it is recorded);
* **action_result()** when the outcome is uncertain (the request was sent, the model may have
  run): no retry; the task fails with the action id and a person or a reconciliation job reads
  ``client.action_result(action_id)``.

Run a worker (prefork pool), with a broker (``CELERY_BROKER_URL``; the guide's try-out uses the
filesystem broker, ``CELERY_BROKER_FOLDER``) and a result backend (``CELERY_RESULT_BACKEND``)::

    celery -A tasks worker --loglevel=info         # from examples/celery_app

Guide: docs/frameworks/celery.md. Tests: tests/examples/test_celery_app.py (eager mode).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Optional

from celery import Celery
from celery.signals import worker_process_init, worker_process_shutdown

from hermes_sdk import HermesClient, HermesError, IdempotencyConflictError, OutcomeUnknownError

app = Celery("hermes_example", broker=os.environ.get("CELERY_BROKER_URL", "memory://"),
             backend=os.environ.get("CELERY_RESULT_BACKEND"))
if os.environ.get("CELERY_BROKER_FOLDER"):  # the filesystem broker of the guide's try-out
    _folder = os.path.abspath(os.environ["CELERY_BROKER_FOLDER"]).rstrip(os.sep)
    # Its exchange tables go beside the queue folder ("<folder>-control"), not into kombu's default,
    # ./control in the working directory (the user's tree).
    app.conf.broker_transport_options = {"data_folder_in": _folder, "data_folder_out": _folder,
                                         "control_folder": _folder + "-control"}

_lock = threading.Lock()
_client: Optional[HermesClient] = None
_pid = 0


def get_client() -> HermesClient:
    """This worker process's client (made on first use; a forked child never uses its parent's)."""
    global _client, _pid
    client, pid = _client, os.getpid()
    if client is not None and _pid == pid:
        return client
    with _lock:
        if _client is None or _pid != pid:
            _client, _pid = HermesClient(), pid
        return _client


def close_client() -> None:
    global _client
    with _lock:
        client, _client = _client, None
        if client is not None and _pid == os.getpid():
            client.close()


@worker_process_init.connect
def _make_client(**_: Any) -> None:
    # Runs in each prefork child right after the fork: drop anything inherited, make this one's own.
    close_client()
    get_client()


@worker_process_shutdown.connect
def _close_client(**_: Any) -> None:
    close_client()


class NeedsReconciliation(Exception):
    """The model call may have run, and nothing says how it ended: do not retry, reconcile."""

    def __init__(self, action_id: Optional[str], code: str) -> None:
        super().__init__(action_id, code)  # picklable: a result backend stores it
        self.action_id, self.code = action_id, code

    def __str__(self) -> str:
        return f"outcome unknown for action {self.action_id} ({self.code}): read client.action_result()"


class IncompleteSummary(Exception):
    """Hermes answered, but the agent did not complete (finish_reason other than stop)."""


@app.task(bind=True, max_retries=5, default_retry_delay=10)
def summarize_order(self: Any, order_id: str, notes: str) -> str:
    client = get_client()
    key = f"order-summary-{order_id}"  # the business intent; not self.request.id (a new enqueue gets a new id)
    try:
        reply = client.chat(prompt=f"Summarize order {order_id}: {notes}", idempotency_key=key)
    except OutcomeUnknownError as err:
        # Another worker holds the key (or died holding it). Nothing was sent now. Wait and try
        # again: once that call is recorded, the retry replays it; after max_retries, escalate.
        raise self.retry(exc=err, countdown=30) from err
    except IdempotencyConflictError:
        raise  # the same order summarized from other notes: a new intent needs a new key
    except HermesError as err:
        if err.details.get("sent") is False:
            # Never left this process (refused connection, connect timeout): the key was given back.
            raise self.retry(exc=err) from err
        if err.details.get("before_agent_work"):
            # Hermes refused before any agent work (429, draining): nothing is recorded under the
            # key, so the retry runs the call once Hermes is back.
            raise self.retry(exc=err, countdown=(err.retry_after_ms or 10_000) / 1000) from err
        if err.uncertain_outcome:
            raise NeedsReconciliation(err.action_id, err.code) from err
        raise  # a certain failure (bad input, authentication...): retrying cannot help
    if not reply.completed:
        # The model ran and the agent did not finish: a known outcome, recorded under the key.
        # Running it again is a new decision (a new key), not an automatic retry.
        raise IncompleteSummary(f"order {order_id}: finish_reason={reply.finish_reason}")
    return reply.text or ""
