"""What every redaction filter (``fn(key, text) -> text``, from ``hermes_redaction_filters``) must do."""

from __future__ import annotations

import threading
import time
from typing import Callable, Iterator, Optional, Sequence

import pytest

from hermes_sdk.plugin import REDACTED

TextFilter = Callable[[Optional[str], str], str]

#: The keys a filter is called with: none (log text), allowed fields, a run's command, any other.
KEYS: tuple[Optional[str], ...] = (None, "status", "model", "path", "command", "objective", "message", "x-unknown")
#: Texts every filter must take: empty, non-ASCII, control and bidi characters, a lone surrogate.
ODD_TEXTS = (
    "", " ", "\n", "plain text", "h\u00e9llo w\u00f6rld \u2713",
    "\u043a\u043b\u044e\u0447 \u6f22\u5b57 \U0001F511\U0001F600",
    "\x00\x01\x1b[31mred\x1b[0m\x7f", "\u202eevil\u202c \u200b\ufeff", "\ud800 lone surrogate",
    "{\"json\": [1, 2, \"three\"]}", "rm -rf /srv/data; curl https://example.org | sh",
    REDACTED, f"{REDACTED} and {REDACTED}", "tab\tseparated\r\nlines",
)


class RedactionFilterContract:
    """The tests every redaction filter passes: subclass it and give :meth:`make_filter`.

    A filter is ``fn(key, text) -> text`` (``key`` the field name, or None for log text). It must
    return a ``str`` for every key and text (empty, non-ASCII, control characters, a lone surrogate,
    a megabyte), never show again what is already hidden (every ``[REDACTED]`` stays), give the
    same answer for the same input (also from many threads at once), be idempotent (filtering its
    own output changes nothing) and take linear time. A filter that raises or returns a non-string
    redacts the whole text (the SDK fails closed), which hides everything a person needed to see.

    Hooks a subclass may give:

    * :meth:`make_filter` (required): the filter.
    * :meth:`hidden_examples`: ``(key, text, secret)`` triples: ``secret`` must not survive in
      ``fn(key, text)``, nor when the text is embedded in other text or in a huge one.
    * :meth:`shown_examples`: ``(key, text)`` pairs the filter leaves as they are.
    * :attr:`huge_size` and :attr:`huge_seconds`: a text of that many characters is filtered
      within that many seconds of CPU, and the time grows linearly with the text (catastrophic
      regular expressions fail here).
    """

    huge_size = 1_000_000
    huge_seconds = 10.0

    def make_filter(self) -> TextFilter:
        """The filter under test (override)."""
        raise NotImplementedError(f"{type(self).__name__} must define make_filter(self) returning fn(key, text)")

    def hidden_examples(self) -> Sequence[tuple[Optional[str], str, str]]:
        """``(key, text, secret)``: what the filter is for; by default none."""
        return ()

    def shown_examples(self) -> Sequence[tuple[Optional[str], str]]:
        """``(key, text)`` the filter leaves unchanged; by default none."""
        return ()

    @pytest.fixture
    def text_filter(self) -> Iterator[TextFilter]:
        yield self.make_filter()

    def test_it_returns_a_string_for_every_key_and_text(self, text_filter: TextFilter) -> None:
        for key in KEYS:
            for text in ODD_TEXTS:
                out = text_filter(key, text)
                assert isinstance(out, str), f"fn({key!r}, {text!r}) returned {type(out).__name__}"

    def test_it_never_shows_what_is_already_hidden(self, text_filter: TextFilter) -> None:
        for key in KEYS:
            for text in (REDACTED, f"token {REDACTED} end", f"{REDACTED}{REDACTED}", f"\u00e9 {REDACTED} \u2713"):
                out = text_filter(key, text)
                assert out.count(REDACTED) >= text.count(REDACTED) or out == REDACTED, \
                    f"fn({key!r}, {text!r}) = {out!r} took a [REDACTED] away"

    def test_it_is_deterministic_and_idempotent(self, text_filter: TextFilter) -> None:
        texts = list(ODD_TEXTS) + [text for _, text, _ in self.hidden_examples()]
        for key in KEYS:
            for text in texts:
                once = text_filter(key, text)
                assert text_filter(key, text) == once, f"fn({key!r}, {text!r}) answered differently twice"
                assert text_filter(key, once) == once, f"filtering fn({key!r}, {text!r}) = {once!r} again changed it"

    def test_it_gives_the_same_answers_from_many_threads(self, text_filter: TextFilter) -> None:
        cases = [(key, text) for key in KEYS for text in ODD_TEXTS]
        cases += [(key, text) for key, text, _ in self.hidden_examples()]
        expected = [text_filter(key, text) for key, text in cases]
        results: list[list[str]] = []
        errors: list[BaseException] = []
        barrier = threading.Barrier(8)

        def run() -> None:
            try:
                barrier.wait(60)
                results.append([text_filter(key, text) for key, text in cases * 5])
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=run, daemon=True) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors, errors
        assert len(results) == 8 and all(r == expected * 5 for r in results)

    def test_a_huge_text_is_filtered_in_linear_time(self, text_filter: TextFilter) -> None:
        # Measured in this thread's CPU time, so a busy machine does not fail a good filter: first how
        # the time grows from n to 4n characters (linear: ~4x, quadratic: ~16x), so a catastrophic
        # expression fails in a second, then the huge text itself within huge_seconds of CPU.
        unit = "a1 b2=c3 \u00e9:\u2713 " + "x" * 7 + "\n"
        makers: tuple[Callable[[int], str], ...] = (lambda n: unit * (n // len(unit)), lambda n: "a" * n,
                                                    lambda n: " " * n)
        for make in makers:
            small, large = (_cpu_per_call(text_filter, make(n)) for n in (5_000, 20_000))
            assert large < max(small, 2e-4) * 10, (
                f"4 times the text took {large / small if small else float('inf'):.0f} times as long "
                f"({small * 1e3:.2f} ms -> {large * 1e3:.2f} ms of CPU): not linear")
            text = make(self.huge_size)
            started = time.thread_time()
            out = text_filter(None, text)
            took = time.thread_time() - started
            assert isinstance(out, str)
            assert took < self.huge_seconds, f"a {len(text)}-character text took {took:.1f} s of CPU"

    def test_it_hides_what_it_is_for(self, text_filter: TextFilter) -> None:
        examples = self.hidden_examples()
        if not examples:
            pytest.skip(f"{type(self).__name__} gives no hidden_examples()")
        for key, text, secret in examples:
            assert secret in text, f"the example {text!r} does not contain its secret"
            for wrapped in (text, f"before \u00e9 {text} after \u2713", f"{text}\n{text}",
                            "y" * 100_000 + " " + text + " " + "z" * 100_000):
                out = text_filter(key, wrapped)
                assert secret not in out, f"fn({key!r}, ...) left {secret!r} in {out[:200]!r}"

    def test_it_leaves_what_it_shows(self, text_filter: TextFilter) -> None:
        examples = self.shown_examples()
        if not examples:
            pytest.skip(f"{type(self).__name__} gives no shown_examples()")
        for key, text in examples:
            assert text_filter(key, text) == text


def _cpu_per_call(text_filter: TextFilter, text: str) -> float:
    """CPU seconds of this thread per call of ``text_filter(None, text)``, over at least 20 ms of CPU."""
    calls, started = 0, time.thread_time()
    while True:
        text_filter(None, text)
        calls += 1
        spent = time.thread_time() - started
        if spent >= 0.02 or calls >= 1000:
            return spent / calls
