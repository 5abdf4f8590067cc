"""Redaction by allowlist: only operational fields survive; every other string is replaced.

Everything the SDK logs (logger ``hermes_sdk``) or hands to tracing passes through a Redactor.
Prompts, outputs, tool data, ids, session values, keys and credentials are not on the allowlist,
so a new provider field is redacted until someone decides it is safe.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import weakref
from typing import Any, Callable, Iterable, NamedTuple, Optional, Pattern

from .display import visible

REDACTED = "[REDACTED]"

# Operational fields whose string values may be shown (after the pattern filters).
ALLOWED_KEYS = frozenset({
    "capability_id", "endpoint_id", "operation", "method", "path", "status", "code", "category",
    "type", "event", "http_status", "remote_status", "retryable", "uncertain_outcome", "replayed",
    "finish_reason", "object", "model", "outcome", "kind", "plugin", "hook", "exception",
    "decision", "stability", "risk", "framing", "reason_code", "attempt", "attempts", "terminal",
    "truncated", "streaming", "idempotency", "content_type",
})

FilterFn = Callable[[Optional[str], str], str]

# A credential's value, as the patterns read it: it starts right after its separator (never after
# whitespace an empty value leaves: ``TOKEN= rm -rf /srv`` has no value) and ends at whitespace, a
# quote, a comma or a shell operator (``; | & < > ` $( ${``), so it never takes the next word.
_VALUE = r"(?:[^\s,;\"'&|<>`$()]|\$(?![({]))+"
# ``key=value`` (no space after ``=``), ``key: value`` (at most one space after ``:``, on the line),
# JSON ``"key": "value"``; an HTTP authorization scheme word (``Basic``) is part of the prefix.
_SEPARATOR = r"[\"']?[ \t]*(?:=|: ?)[\"']?(?:(?:bearer|basic|digest|negotiate) (?=[^\s]))?"

#: Credentials: the values of a key, token, password or authorization, bearer tokens, a URL's
#: password. What an approver is shown hides these and nothing else (:func:`scrub_command`).
CREDENTIAL_PATTERNS: tuple[Pattern[str], ...] = tuple(re.compile(p) for p in (
    r"(?i)bearer " + _VALUE,
    # (a scheme word with no credential after it is not a value: ``Authorization: Bearer`` then a newline)
    r"(?i)(api[_-]?key|authorization|token|secret|password)(" + _SEPARATOR + ")"
    r"(?!(?:bearer|basic|digest|negotiate)\b)" + _VALUE,
    r"(?i)(\b[a-z][a-z0-9+.-]*://[^\s/?#@:]+:)[^\s/?#@]+(?=@)",  # a URL's password (user:password@host)
))

#: Identifiers (response, chat, message, run ids, UUIDs, ``sk-`` keys): scrubbed from logs and
#: traces, never from what an approver is shown (a path, a name or a target is not a secret).
ID_PATTERNS: tuple[Pattern[str], ...] = tuple(re.compile(p) for p in (
    r"\bresp_[A-Za-z0-9]+",
    r"\bchatcmpl-[A-Za-z0-9]+",
    r"\b(?:msg|fc|fco|run)_[A-Za-z0-9]{8,}",
    r"\bapi-[0-9a-f]{16}\b",
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
    r"\bsk-[A-Za-z0-9_-]{8,}",
))

# Identifiers and credentials that must not survive even inside an allowed field (logs, traces).
DEFAULT_PATTERNS: tuple[Pattern[str], ...] = CREDENTIAL_PATTERNS[:2] + ID_PATTERNS + CREDENTIAL_PATTERNS[2:]


def _scoped(pattern: str) -> str:
    # A leading global flag becomes a scoped group, so the patterns can be joined.
    return f"(?i:{pattern[4:]})" if pattern.startswith("(?i)") else f"(?:{pattern})"


# One search tells whether any default pattern can match: most allowed values ("chat.completion.chunk",
# a model name) match none, and nine substitutions per value cost more than the rest of a redaction.
_ANY_DEFAULT = re.compile("|".join(_scoped(p.pattern) for p in DEFAULT_PATTERNS))

_live: "weakref.WeakSet[Redactor]" = weakref.WeakSet()
_live_lock = threading.Lock()
_secrets: set[str] = set()
_secrets_lock = threading.Lock()
# Short texts already scrubbed by the secrets and the default patterns (both fixed until a secret is
# registered, which empties it): stream events repeat the same few allowed values thousands of times.
_scrubbed: dict[str, str] = {}
_SCRUBBED_MAX = 4096
_SCRUBBED_TEXT_MAX = 256
_generation = 0  # bumped with each new secret: a text scrubbed before it is not cached after it


_ID_SEGMENT = r"[^/\s\"'?#]+"
_route_paths: set[str] = set()  # the path templates of the registered operations
_route_ids: Optional[tuple[Optional[Pattern[str]]]] = None  # the pattern derived from them, once built


def register_route(path: str) -> None:
    """A built-in operation's path template (``/api/sessions/{session_id}/chat``): the text before
    each of its parameters marks an id that log text never shows, in every client. A plugin family's
    templates are its client's own (``Redactor(routes=...)``)."""
    global _route_ids
    if "{" in path and path not in _route_paths:
        _route_paths.add(path)
        _route_ids = None


def route_ids() -> Optional[Pattern[str]]:
    """The id segments of every registered operation's route, derived from the path templates
    themselves (``/api/sessions/{session_id}/chat`` scrubs what follows ``/api/sessions/``): one
    pattern whose group 1 is the static text before an id."""
    global _route_ids
    cached = _route_ids
    if cached is not None:
        return cached[0]
    pattern = _route_pattern(list(_route_paths))
    _route_ids = (pattern,)
    _scrubbed.clear()
    return pattern


def _route_pattern(paths: Iterable[str]) -> Optional[Pattern[str]]:
    """One pattern whose group 1 is the static text before an id of any of ``paths`` (None: no id)."""
    prefixes = {static for path in paths for static in re.split(r"\{[^}]*\}", path)[:-1] if static.strip("/")}
    return re.compile("(" + "|".join(re.escape(p) for p in sorted(prefixes, key=len, reverse=True)) + ")"
                      + _ID_SEGMENT) if prefixes else None


def register_secret(value: Optional[str]) -> None:
    """Exact values (API keys) that every redactor and the logging filter scrub wherever they appear."""
    global _generation
    if value and len(value) >= 4:
        with _secrets_lock:
            if value not in _secrets:
                _secrets.add(value)
                _generation += 1
                _scrubbed.clear()


def holds_secret(text: str) -> bool:
    """Whether ``text`` holds a registered secret (an API key): an id a server echoed it as is not kept."""
    return any(secret in text for secret in tuple(_secrets))


def scrub(text: str) -> str:
    """The default identifier and credential patterns, and registered secrets, applied to free text."""
    done = _scrubbed.get(text)
    if done is not None and _route_ids is not None:
        return done
    original, generation = text, _generation
    routes = route_ids()
    if routes is not None and "/" in text:
        text = _sub(routes, text)
    for secret in tuple(_secrets):
        if secret in text:
            text = text.replace(secret, REDACTED)
    if _ANY_DEFAULT.search(text) is not None:
        for pattern in DEFAULT_PATTERNS:
            text = _sub(pattern, text)
    if len(original) <= _SCRUBBED_TEXT_MAX:
        with _secrets_lock:
            if generation == _generation:
                if len(_scrubbed) >= _SCRUBBED_MAX:
                    _scrubbed.clear()
                _scrubbed[original] = text
    return text


def _sub(pattern: Pattern[str], text: str) -> str:
    def repl(match: "re.Match[str]") -> str:
        if pattern.groups >= 2:
            return match.group(1) + match.group(2) + REDACTED
        if pattern.groups == 1:
            return match.group(1) + REDACTED
        return REDACTED
    return pattern.sub(repl, text)


#: What a credential's value is made of (base64 and base64url, hex, JWT dots): in a command, a
#: pattern's match replaces one run of these after its prefix and never a byte outside that run, so
#: a value cannot swallow the ``&&``, ``;``, ``${IFS}``, ``/``, quote or space that follows it.
SECRET_CHARS = "A-Za-z0-9_.+=-"
_SECRET_RUN = re.compile(f"[{SECRET_CHARS}]+")
# The credential patterns as command patterns: the Bearer prefix is a kept group there, not the value.
_COMMAND_PATTERNS: tuple[Pattern[str], ...] = (re.compile(r"(?i)(bearer )" + _VALUE),) + CREDENTIAL_PATTERNS[1:]
# A word shaped like an API key (``sk-`` and 16+ characters mixing letters and digits) outside a
# credential position: hidden from an approver, who is told so (``sk-payments-production`` has no
# digit: a name, shown).
# A credential value after a space is hidden from an approver only when shaped like a token: 16+
# characters holding letters and digits (``rm``, ``mkfs.ext4``, ``hunter2`` are shown); the command is
# then not fully shown, since such a word could also be an argument.
_TOKEN_SHAPED = re.compile(r"(?=[A-Za-z0-9_.+=-]*[A-Za-z])(?=[A-Za-z0-9_.+=-]*[0-9])[A-Za-z0-9_.+=-]{16,}")
_KEY_SHAPED = re.compile(r"\bsk-(?=[A-Za-z0-9_-]*[A-Za-z])(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{16,}")


def _value_start(pattern: Pattern[str], match: "re.Match[str]") -> int:
    # Where the value starts: after the kept groups (as _sub keeps them), else the match itself.
    kept = min(pattern.groups, 2)
    end = match.end(kept) if kept else -1
    return end if end >= 0 else match.start()


def _replace_values(text: str, pattern: Pattern[str], spaced: Optional[list[str]] = None) -> str:
    """Each match's value (the run of SECRET_CHARS after its kept prefix) replaced, nothing else.

    With ``spaced`` (a command's credential patterns), a value that starts after a space (``Token:
    x``, ``Bearer x``) may be the next shell word, not a value: it is hidden only when it is shaped
    like a token (:data:`_TOKEN_SHAPED`), and then noted in ``spaced``; a word like ``rm`` or
    ``mkfs.ext4`` is shown.
    """
    pieces, last = [], 0
    for match in pattern.finditer(text):
        run = _SECRET_RUN.match(text, _value_start(pattern, match), match.end())
        if run is None:
            continue
        if spaced is not None and run.start() > 0 and text[run.start() - 1].isspace():
            if not _TOKEN_SHAPED.fullmatch(run.group()):
                continue
            spaced.append(run.group())
        pieces += [text[last:run.start()], REDACTED]
        last = run.end()
    return "".join(pieces) + text[last:] if pieces else text


def scrub_command(text: str) -> tuple[str, bool]:
    """A command as an approver sees it, and whether a token-shaped word after a space was hidden.

    Each secret's value is replaced and every other byte kept. Registered secrets are replaced
    where they appear; a credential pattern's match replaces only the run of :data:`SECRET_CHARS`
    its value starts with, so ``export TOKEN=x&&rm${IFS}-rf${IFS}/srv`` is shown
    ``export TOKEN=[REDACTED]&&rm${IFS}-rf${IFS}/srv``. A value after a space (``Token: rm -rf
    /srv``) is hidden only when shaped like a token (the second item is then True). Identifiers
    (:data:`ID_PATTERNS`) are not secrets and are shown.
    """
    for secret in tuple(_secrets):
        if secret in text:
            text = text.replace(secret, REDACTED)
    spaced: list[str] = []
    for pattern in _COMMAND_PATTERNS:
        text = _replace_values(text, pattern, spaced)
    return text, bool(spaced)


class CommandView(NamedTuple):
    """A command as an approver is shown it.

    ``text``: the command with only secrets' values replaced (``[REDACTED]`` alone when a filter
    changed more). ``fully_shown``: False when a policy (a key-shaped word, a redaction pattern or
    filter of the client) hid more than a credential's value; ``not_shown`` then says what.
    """

    text: str
    fully_shown: bool = True
    not_shown: Optional[str] = None


def only_secrets_replaced(original: str, shown: str) -> bool:
    """Whether ``shown`` is ``original`` with nothing but secret values (runs of :data:`SECRET_CHARS`
    or registered secrets) replaced by ``[REDACTED]``: every other byte kept, in order."""
    if REDACTED not in shown:
        return shown == original
    # (a command that itself holds the text "[REDACTED]" keeps it)
    value = "|".join([f"[{SECRET_CHARS}]+", re.escape(REDACTED)] + [re.escape(s) for s in tuple(_secrets)])
    expected = f"(?:{value})".join(re.escape(piece) for piece in shown.split(REDACTED))
    return re.fullmatch(expected, original, re.DOTALL) is not None


class Redactor:
    """The allowlist for structures, and the pattern, secret and plugin filters for text.

    Args:
        filters: extra text filters ``fn(key, text) -> text`` (a failing one redacts the whole text).
        patterns: extra regular expressions whose matches are redacted.
        allowed_keys: extra keys whose string values may be shown.
    """

    def __init__(self, filters: Iterable[FilterFn] = (), patterns: Iterable[str] = (),
                 allowed_keys: Iterable[str] = (), routes: Iterable[str] = ()) -> None:
        self.filters = tuple(filters)
        # The client's plugin families' path templates: their ids are scrubbed from what this client
        # logs and traces (never from a command an approver is shown), not from another client's.
        self.routes = _route_pattern(p for p in routes if p not in _route_paths)
        self.extra_patterns = tuple(re.compile(p) for p in patterns)
        self.patterns = DEFAULT_PATTERNS + self.extra_patterns
        self.allowed = ALLOWED_KEYS | frozenset(allowed_keys)
        if self.filters or self.extra_patterns or self.routes is not None:
            # The process-wide log filter applies these too, for as long as this redactor lives.
            with _live_lock:
                _live.add(self)

    def allowing(self, keys: Iterable[str]) -> "Redactor":
        """A copy that also shows the string values of ``keys`` (same filters and patterns)."""
        copy = object.__new__(Redactor)
        copy.filters, copy.extra_patterns, copy.patterns = self.filters, self.extra_patterns, self.patterns
        copy.routes = self.routes
        copy.allowed = self.allowed | frozenset(keys)
        return copy

    def text(self, value: str, key: Optional[str] = None) -> str:
        """Scrub a string that is allowed to be shown (a failing plugin filter redacts it all)."""
        value = scrub(value)
        if not self.extra_patterns and not self.filters and self.routes is None:
            return value
        return self.extra(value, key)

    def retire(self) -> None:
        """Its client closed: the process-wide log filter no longer applies its patterns, filters and routes."""
        with _live_lock:
            _live.discard(self)

    def command(self, value: str) -> str:
        """A command as shown to an approver: secrets' values replaced, every other byte kept
        (the text of :meth:`command_view`)."""
        return self.command_view(value).text

    def command_view(self, value: str, key: str = "command") -> CommandView:
        """A command as shown to an approver, and whether it is shown whole but for secrets.

        :func:`scrub_command` (registered secrets, credential values) never makes a command "not
        fully shown". A word shaped like an API key, this redactor's own patterns and its plugin
        filters may hide more (a path, a name, a target): the view then says ``fully_shown=False``
        and an approval of it does not stand without ``blind=True`` (see ``ApprovalRequest``).
        A filter that changes more than a run of :data:`SECRET_CHARS` (or fails) leaves nothing
        shown but ``[REDACTED]``, never a command other than the one approved.
        """
        shown, spaced = scrub_command(value)
        hidden: list[str] = ["a credential's value after a space"] if spaced else []
        for pattern, why in ((_KEY_SHAPED, "a word shaped like an API key"),) + tuple(
                (p, "a redaction pattern of the client") for p in self.extra_patterns):
            changed = _replace_values(shown, pattern)
            if changed != shown and why not in hidden:
                hidden.append(why)
            shown = changed
        if self.filters:
            filtered = self.extra(shown, key, patterns=False)
            if filtered != shown:
                hidden.append("a redaction filter of the client")
            shown = filtered
        if not only_secrets_replaced(value, shown):
            logging.getLogger("hermes_sdk").warning(
                "hermes_sdk: a redaction filter changed a %s beyond a secret's value; it is shown redacted",
                "command" if key == "command" else "value shown to an approver")
            return CommandView(REDACTED, False,
                               f"a redaction filter changed the {visible(key)} beyond a secret's value")
        if hidden:
            return CommandView(shown, False, " and ".join(hidden) + f" hides part of the {visible(key)}")
        return CommandView(shown)

    def extra(self, value: str, key: Optional[str] = None, patterns: bool = True) -> str:
        """Apply only this redactor's own configured patterns and plugin filters."""
        if patterns:
            if self.routes is not None:
                value = _sub(self.routes, value)
            for pattern in self.extra_patterns:
                value = _sub(pattern, value)
        for fn in self.filters:
            try:
                value = fn(key, value)
            except Exception:
                return REDACTED
            if not isinstance(value, str):
                return REDACTED
        return value

    def redact(self, value: Any, key: Optional[str] = None) -> Any:
        """Return a redacted copy: strings survive only under allowed keys; numbers and bools stay."""
        if value is None or isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, str):
            return self.text(value, key) if key in self.allowed else REDACTED
        if isinstance(value, dict):
            return {str(k): self.redact(v, str(k)) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.redact(v, key) for v in value]
        return REDACTED


class RedactingLogFilter(logging.Filter):
    """Defense in depth on log records: the message rendered and scrubbed with the text filters.

    Installed on the ``hermes_sdk`` logger, and on ``urllib3.connectionpool`` whose DEBUG lines
    carry request paths (a response id is part of the path).
    """

    def __init__(self, redactor: Optional[Redactor] = None) -> None:
        super().__init__()
        self.redactor = redactor or Redactor()

    def filter(self, record: logging.LogRecord) -> bool:
        """Replace the record's message with its scrubbed rendering; never drops a record."""
        try:
            message = record.getMessage()
        except Exception:
            message = str(record.msg)
        text = self.redactor.text(message)
        with _live_lock:
            live = list(_live)
        for redactor in live:
            text = redactor.extra(text)
        record.msg = text
        record.args = None
        return True


_installed = False
_install_lock = threading.Lock()


def _new_locks_after_fork() -> None:
    # A forked child must not wait on a lock another thread of its parent held at the fork.
    global _live_lock, _secrets_lock, _install_lock
    _live_lock, _secrets_lock, _install_lock = threading.Lock(), threading.Lock(), threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_locks_after_fork)


def install_log_filters() -> None:
    """Attach the redacting filter once per process to the loggers that could carry sensitive text."""
    global _installed
    if _installed:
        return
    with _install_lock:
        if _installed:
            return
        filt = RedactingLogFilter()
        for name in ("hermes_sdk", "urllib3.connectionpool"):
            logging.getLogger(name).addFilter(filt)
        _installed = True
