"""Finding a stored approval entry by an identifier, the same way in every approval queue backend.

An approval queue (hermes-sdk-inbox's SQLite, memory and Redis queues, hermes-sdk-sql's queue, a third
party's) stores each pending approval as a JSON document: its ``id`` and the request's
:attr:`~hermes_sdk.plugin.ProviderRequest.identifiers` (``identifiers``; entries written before 0.2
kept ``targets``). ``list(identifier=...)`` keeps the entries whose id is the identifier or whose
identifiers hold it; a SQL backend narrows its query with :func:`like_identifier` and keeps the exact
matches with :func:`exact_pages`. These live here, in the public plugin API, so that the backends
share one rule without importing each other's package.
"""

from __future__ import annotations

import json
from typing import Any, Callable


def entry_identifiers(entry: dict[str, Any]) -> dict[str, str]:
    """An entry's ``identifiers`` (entries queued by an earlier build kept redacted ``targets`` instead)."""
    ids = entry.get("identifiers")
    if isinstance(ids, dict):
        return ids
    targets = entry.get("targets")
    return dict(targets) if isinstance(targets, dict) else {}


def holds_identifier(entry: dict[str, Any], identifier: str) -> bool:
    """Whether ``identifier`` is the entry's id or one of its :func:`entry_identifiers`."""
    return entry.get("id") == identifier or identifier in entry_identifiers(entry).values()


def like_identifier(identifier: str) -> str:
    """A SQL ``LIKE`` pattern (escape ``\\``) matching every document, written by ``json.dumps`` with its
    default ASCII escaping, that holds ``identifier`` as a JSON string (a superset: :func:`holds_identifier`
    keeps the exact matches)."""
    quoted = json.dumps(identifier)
    return "%" + quoted.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def exact_pages(fetch: Callable[[int, int], list[dict[str, Any]]], identifier: str, limit: int,
                offset: int, page: int = 200) -> list[dict[str, Any]]:
    """The ``limit`` exact matches after ``offset`` from a query that may return extra entries:
    ``fetch(offset, size)`` reads the narrowed query page by page, to its end if need be."""
    out: list[dict[str, Any]] = []
    skipped = read = 0
    while len(out) < limit:
        batch = fetch(read, page)
        read += len(batch)
        for doc in batch:
            if not holds_identifier(doc, identifier):
                continue
            if skipped < offset:
                skipped += 1
                continue
            out.append(doc)
            if len(out) >= limit:
                break
        if len(batch) < page:
            break
    return out
