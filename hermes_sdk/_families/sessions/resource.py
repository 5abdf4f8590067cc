"""``client.sessions``: Hermes' addressable, persistent sessions (``/api/sessions``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Optional, Union

import attrs

from hermes_sdk.errors import HermesError, InvalidInputError, InvalidResponseError
from hermes_sdk.plugin import (
    DEFAULT_MAX_EVENTS,
    REQUIRED,
    UNCHANGED,
    ApprovalDecision,
    CallOptions,
    Deadline,
    ExecutionContext,
    FamilyExecutor,
    TimeoutLike,
)

from .operations import (
    MAX_LIST_LIMIT,
    MAX_LIST_OFFSET,
    MESSAGES_PAGE_MAX,
    SESSION_CHAT,
    SESSION_CHAT_STREAM,
    SESSION_CREATE,
    SESSION_DELETE,
    SESSION_FORK,
    SESSION_GET,
    SESSION_MESSAGES,
    SESSION_PATCH,
    SESSIONS_LIST,
)
from .types import Session, SessionChatStream, SessionDeleted, SessionPage, SessionReply, SessionTranscript

#: A chat turn's ``message``: a string, or a list of content parts (objects, or strings).
ChatMessage = Union[str, Sequence[Union[str, Mapping[str, object]]]]


def _key(value: str) -> Optional[str]:
    return None if value is REQUIRED else value


class Sessions:
    """Hermes sessions: a stored transcript you address by id and chat on, turn by turn.

    Every method also takes ``endpoint=``, ``action_id=``, ``context=``, ``deadline=`` and
    ``timeout=``. Reads are retried; writes need an ``idempotency_key`` (the SDK's store makes a
    replay return the first outcome: Hermes ignores ``Idempotency-Key`` on these routes).
    """

    def __init__(self, executor: FamilyExecutor) -> None:
        self._executor = executor

    def _options(self, endpoint: Optional[str], key: Optional[str], action_id: Optional[str],
                 context: Optional[ExecutionContext], deadline: Deadline, timeout: TimeoutLike,
                 approval: Optional[ApprovalDecision] = None, reason: Optional[str] = None,
                 idle_timeout: Optional[float] = None, keep_events: bool = True) -> CallOptions:
        return CallOptions(endpoint=endpoint, idempotency_key=key, action_id=action_id, context=context,
                           deadline=deadline, timeout=timeout, approval=approval, reason=reason,
                           idle_timeout=idle_timeout, keep_events=keep_events)

    def create(self, session_id: Optional[str] = None, *, title: Optional[str] = None,
               system_prompt: Optional[str] = None, model: Optional[str] = None, idempotency_key: str = REQUIRED,
               endpoint: Optional[str] = None, action_id: Optional[str] = None,
               context: Optional[ExecutionContext] = None, deadline: Deadline = None,
               timeout: TimeoutLike = None) -> Session:
        """Create an empty session (``POST /api/sessions``); no model call is made.

        ``session_id`` defaults to one Hermes generates (``api_<epoch>_<8 hex>``); an id with
        ``/``, ``\\``, ``..``, a control character, a drive prefix or over 256 characters is refused before
        I/O (Hermes refuses them too); an existing id is a RemoteRejectedError (409
        ``session_exists``). ``title`` must be unique (400 ``invalid_title``) and at most 100
        characters once cleaned. Hermes stores ``system_prompt`` but does not use it for later
        turns, and the first turn overwrites ``model``.
        """
        data: dict[str, object] = {"session_id": session_id, "title": title, "system_prompt": system_prompt,
                                "model": model}
        return self._executor.request(SESSION_CREATE, {k: v for k, v in data.items() if v is not None},
                                      self._options(endpoint, _key(idempotency_key), action_id, context, deadline,
                                                    timeout))

    def get(self, session_id: str, *, endpoint: Optional[str] = None, action_id: Optional[str] = None,
            context: Optional[ExecutionContext] = None, deadline: Deadline = None,
            timeout: TimeoutLike = None) -> Session:
        """One session (``GET /api/sessions/{id}``); NotFoundError for an unknown id."""
        return self._executor.request(SESSION_GET, {"session_id": session_id},
                                      self._options(endpoint, None, action_id, context, deadline, timeout))

    def list(self, *, limit: int = 50, offset: int = 0, source: Optional[str] = None,
             include_children: bool = False, endpoint: Optional[str] = None, action_id: Optional[str] = None,
             context: Optional[ExecutionContext] = None, deadline: Deadline = None,
             timeout: TimeoutLike = None) -> SessionPage:
        """One page of sessions, most recently active first (``GET /api/sessions``).

        ``limit`` 0-200, ``offset`` 0-1,000,000; ``source`` filters (``api_server``, ``cron``);
        ``include_children`` also lists forks Hermes hides by default. Hermes' ``has_more`` is only
        ``len(data) == limit`` (True on an exact last page): use :meth:`iter` to read them all.
        """
        data: dict[str, object] = {"limit": limit, "offset": offset, "include_children": include_children}
        if source is not None:
            data["source"] = source
        return self._executor.request(SESSIONS_LIST, data,
                                      self._options(endpoint, None, action_id, context, deadline, timeout))

    def iter(self, *, source: Optional[str] = None, include_children: bool = False, page_size: int = 100,
             endpoint: Optional[str] = None, context: Optional[ExecutionContext] = None,
             deadline: Deadline = None, timeout: TimeoutLike = None) -> Iterator[Session]:
        """Every session, page by page, each once; stops on a short or empty page.

        Bounded: a full page with nothing new (a server or proxy that ignores ``offset``), or more
        than 1,000,000 sessions, ends the iteration with InvalidResponseError
        (``details["reason"]`` ``page_repeated`` or ``too_many_pages``).

        Pages are offsets into a list ordered by last activity: a session that becomes active
        while iterating moves to the front, so it may be skipped (it is never yielded twice).
        ``page_size`` is 1-200 (checked before anything is sent).
        """
        if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= MAX_LIST_LIMIT:
            raise InvalidInputError(f"page_size must be an integer from 1 to {MAX_LIST_LIMIT}",
                                    details={"field": "page_size"})
        return self._pages(source, include_children, page_size, endpoint, context, deadline, timeout)

    def _pages(self, source: Optional[str], include_children: bool, page_size: int, endpoint: Optional[str],
               context: Optional[ExecutionContext], deadline: Deadline, timeout: TimeoutLike) -> Iterator[Session]:
        seen: set[str] = set()
        offset = 0
        while True:
            page = self.list(limit=page_size, offset=offset, source=source, include_children=include_children,
                             endpoint=endpoint, context=context, deadline=deadline, timeout=timeout)
            new = 0
            for found in page.data:
                if found.id not in seen:
                    seen.add(found.id)
                    new += 1
                    yield found
            if len(page.data) < page_size:
                return
            offset += len(page.data)
            if not new or offset > MAX_LIST_OFFSET:
                # A server or proxy that ignores offset repeats a full page forever; Hermes never
                # lists past the offset it accepts. Either way the listing cannot end by itself.
                reason = "page_repeated" if not new else "too_many_pages"
                raise InvalidResponseError(
                    "Hermes answered a full page of sessions with nothing new (a server or proxy that "
                    "ignores offset): the iteration stopped" if not new else
                    f"Hermes listed more than {MAX_LIST_OFFSET} sessions: the iteration stopped",
                    details={"operation": "sessions_list", "reason": reason, "offset": offset})

    def update(self, session_id: str, *, title: Optional[str] = UNCHANGED, end_reason: str = UNCHANGED,
               idempotency_key: str = REQUIRED, endpoint: Optional[str] = None, action_id: Optional[str] = None,
               context: Optional[ExecutionContext] = None, deadline: Deadline = None,
               timeout: TimeoutLike = None) -> Session:
        """Change a session's ``title`` and/or end it (``PATCH /api/sessions/{id}``).

        A keyword left out is left unchanged; ``title=None`` clears the title. ``end_reason``
        ends the session (sets ``ended_at``); the first end reason wins, later ones change nothing,
        and an ended session cannot be re-opened (it still accepts chat turns).
        """
        data: dict[str, object] = {"session_id": session_id}
        if title is not UNCHANGED:
            data["title"] = title
        if end_reason is not UNCHANGED:
            data["end_reason"] = end_reason
        return self._executor.request(SESSION_PATCH, data, self._options(
            endpoint, _key(idempotency_key), action_id, context, deadline, timeout))

    def delete(self, session_id: str, *, idempotency_key: str = REQUIRED, approval: Optional[ApprovalDecision] = None,
               reason: Optional[str] = None, endpoint: Optional[str] = None, action_id: Optional[str] = None,
               context: Optional[ExecutionContext] = None, deadline: Deadline = None,
               timeout: TimeoutLike = None) -> SessionDeleted:
        """Delete a session and its messages (``DELETE /api/sessions/{id}``).

        Needs ``idempotency_key`` and an approved decision bound to this exact input
        (``client.approval_request("session_delete", {"session_id": ...})``), from ``approval=``
        or the approval provider; without one nothing is sent (ApprovalRequiredError). Forks of
        the session are not deleted: their ``parent_session_id`` becomes None.
        """
        return self._executor.request(SESSION_DELETE, {"session_id": session_id}, self._options(
            endpoint, _key(idempotency_key), action_id, context, deadline, timeout, approval=approval, reason=reason))

    def messages(self, session_id: str, *, endpoint: Optional[str] = None, action_id: Optional[str] = None,
                 context: Optional[ExecutionContext] = None, deadline: Deadline = None,
                 timeout: TimeoutLike = None) -> SessionTranscript:
        """The whole stored transcript (``GET /api/sessions/{id}/messages``), as Hermes resolves the id.

        Every message on every version: Hermes 0.20+ answers the latest 500 when asked without a
        ``limit``, so the SDK reads pages of 500 oldest first until a short one (0.19 ignores the
        paging and sends everything at once). On 0.19 and 0.20, asking for a forked **parent**
        answers with the **newest fork's** transcript: ``transcript.session_id`` names the session
        Hermes answered for (``transcript.redirected`` says it differs from ``session_id``); 0.21+
        answers with the parent's own. ``transcript.fork_redirect`` says which the server does.
        """
        options = self._options(endpoint, None, action_id, context, deadline, timeout)
        page = MESSAGES_PAGE_MAX
        data: dict[str, object] = {"session_id": session_id, "limit": page, "offset": 0, "order": "oldest"}
        found: SessionTranscript = self._executor.request(SESSION_MESSAGES, data, options)
        messages, pages, offset = list(found.messages), 1, 0
        # 0.20+ says how it paged; a server without "pagination" (0.19) sent everything.
        while found.pagination is not None and len(found.messages) >= page:
            offset += len(found.messages)
            data["offset"] = offset
            found = self._executor.request(SESSION_MESSAGES, data, options)
            messages.extend(found.messages)
            pages += 1
        return attrs.evolve(found, messages=messages, requested_id=session_id, pages=pages,
                            fork_redirect=self._fork_redirect(endpoint))

    def _fork_redirect(self, endpoint: Optional[str]) -> Optional[bool]:
        """Whether the server answers a forked parent with its newest fork (by its version, read
        once per client); None when the server does not say."""
        try:
            return self._executor.server_features(endpoint).fork_redirect
        except HermesError:
            return None

    def fork(self, session_id: str, *, new_session_id: Optional[str] = None, title: Optional[str] = None,
             idempotency_key: str = REQUIRED, endpoint: Optional[str] = None, action_id: Optional[str] = None,
             context: Optional[ExecutionContext] = None, deadline: Deadline = None,
             timeout: TimeoutLike = None) -> Session:
        """Copy a session and all its messages into a new one (``POST /api/sessions/{id}/fork``).

        The source is ended ``branched`` (unless it was ended already); the fork's title is
        ``title`` or the lineage title (``"Alpha #2"``, ``"fork"``). Not atomic at Hermes: a title
        in use fails with 400 *after* the fork was created and the source ended.
        """
        data: dict[str, object] = {"session_id": session_id}
        if new_session_id is not None:
            data["id"] = new_session_id
        if title is not None:
            data["title"] = title
        return self._executor.request(SESSION_FORK, data, self._options(
            endpoint, _key(idempotency_key), action_id, context, deadline, timeout))

    def chat(self, session_id: str, message: ChatMessage, *, system_message: Optional[str] = None,
             session_key: Optional[str] = None, idempotency_key: Optional[str] = None,
             endpoint: Optional[str] = None, action_id: Optional[str] = None,
             context: Optional[ExecutionContext] = None, deadline: Deadline = None,
             timeout: TimeoutLike = None) -> SessionReply:
        """One agent turn on the session's stored history (``POST /api/sessions/{id}/chat``).

        ``message`` is a string or a list of content parts; ``system_message`` is an ephemeral
        system prompt for this turn only. Hermes never signals a failed turn: an upstream failure
        is a reply whose text is the error (with zero usage); a turn without text raises
        AgentIncompleteError. Not retried; Hermes has no per-session lock (parallel turns see
        the same history).
        """
        data = _chat_input(session_id, message, system_message, session_key)
        return self._executor.request(SESSION_CHAT, data, self._options(
            endpoint, idempotency_key, action_id, context, deadline, timeout))

    def chat_stream(self, session_id: str, message: ChatMessage, *, system_message: Optional[str] = None,
                    session_key: Optional[str] = None, idempotency_key: Optional[str] = None,
                    max_events: int = DEFAULT_MAX_EVENTS, keep_events: bool = True,
                    endpoint: Optional[str] = None, action_id: Optional[str] = None,
                    context: Optional[ExecutionContext] = None, deadline: Deadline = None,
                    timeout: TimeoutLike = None, idle_timeout: Optional[float] = None) -> SessionChatStream:
        """A streamed turn (``POST /api/sessions/{id}/chat/stream``); returns once the headers arrived.

        ``typed()`` yields the typed events, ``text_deltas()`` the reply's text and ``result()``
        the aggregate, read to ``done``. Closing early drops the connection but does not stop the
        turn: Hermes completes and stores it anyway.
        """
        data = _chat_input(session_id, message, system_message, session_key)
        data["max_events"] = max_events
        return self._executor.request(SESSION_CHAT_STREAM, data, self._options(
            endpoint, idempotency_key, action_id, context, deadline, timeout, idle_timeout=idle_timeout,
            keep_events=keep_events))


def _chat_input(session_id: str, message: ChatMessage, system_message: Optional[str],
                session_key: Optional[str]) -> dict[str, object]:
    data: dict[str, object] = {"session_id": session_id, "message": message}
    if system_message is not None:
        data["system_message"] = system_message
    if session_key is not None:
        data["session_key"] = session_key
    return data
