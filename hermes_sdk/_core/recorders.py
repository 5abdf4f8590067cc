"""The test doubles and recorders an application's tests put under the SDK.

Two things the SDK does differently when one is in place:

- an exception a test double raised (a replay miss of vcrpy, an unmatched call of ``responses`` or
  requests-mock, a miss of :mod:`hermes_sdk.testing.cassette`) reaches the test as it was raised,
  never typed as a transport or plugin failure: it says what the test has to fix;
- while a vcrpy cassette records (pytest-recording uses vcrpy), a reply reaches the SDK only once
  vcrpy has read all of it, so a run's events stream, which stays open while the run waits for a
  person, would arrive after the run ended: no approval could be asked for. A run then watches its
  status as well and is refused (:func:`refusal`) as soon as it waits for an approval;
- while a vcrpy cassette replays, such a run is refused the same way, with the same error: the
  recording holds the status looks that saw it wait and the stop, but not the events (vcrpy had
  not read them whole), so the run follows the recorded status; where the events were recorded
  after all, their approval request is refused.

Both are told from public attributes only: an exception's class module and the module of the frame
that raised it; vcrpy's patched connection classes carry their ``cassette``.
"""

from __future__ import annotations

import http.client
from typing import Iterator, Optional

import urllib3

from ..errors import ApprovalRequiredError

#: The packages whose exceptions are a test double's verdict, not a transport failure.
DOUBLES = ("vcr", "responses", "requests_mock", "hermes_sdk.testing.cassette")
_MARK = "hermes_sdk_test_double"  # set on such an exception once told, before its frames are trimmed
#: How often a run followed under a recording vcrpy cassette looks at its status (seconds).
RECORDER_POLL = 0.5
#: What to use instead (said by the refusal and by the testing guide), with the words to look up.
INSTEAD = ("record runs that need an approval with hermes_sdk.testing's cassette (the hermes_cassette "
           "fixture, or hermes_sdk.testing.cassette.use_cassette), which hands the events over as they arrive: "
           "see 'Runs that wait for an approval' in the hermes-sdk documentation's 'Testing your application'")


def _of_double(module: object) -> bool:
    name = module if isinstance(module, str) else ""
    return any(name == pkg or name.startswith(pkg + ".") for pkg in DOUBLES)


def raised_by_test_double(exc: BaseException) -> bool:
    """Whether a test double raised ``exc`` (its class, or the innermost frame, is the double's)."""
    if getattr(exc, _MARK, False):
        return True
    found = _of_double(type(exc).__module__)
    if not found:
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        found = tb is not None and _of_double(tb.tb_frame.f_globals.get("__name__"))
    if found:
        try:
            setattr(exc, _MARK, True)
        except AttributeError:  # an exception class with __slots__: told again from its class
            pass
    return found


def _vcrpy_cassettes() -> Iterator[object]:
    for klass in (urllib3.HTTPConnectionPool.ConnectionCls, urllib3.HTTPSConnectionPool.ConnectionCls,
                  http.client.HTTPConnection):
        cassette = getattr(klass, "cassette", None)
        if cassette is not None:
            yield cassette


def buffering_recorder() -> Optional[str]:
    """``"vcrpy"`` while a vcrpy cassette may record (a cassette that only replays does not block)."""
    if any(not getattr(cassette, "write_protected", False) for cassette in _vcrpy_cassettes()):
        return "vcrpy"
    return None


def replaying_recorder() -> Optional[str]:
    """``"vcrpy"`` while a vcrpy cassette only replays (what it recorded of a run that waited for a
    person is the refusal, which the replay gives again)."""
    if any(getattr(cassette, "write_protected", False) for cassette in _vcrpy_cassettes()):
        return "vcrpy"
    return None


def refusal(recorder: str, run_id: str, stopped: bool) -> ApprovalRequiredError:
    """The error for a run that waits for a person under a ``recorder`` cassette: the same words
    while it records and while it replays."""
    then = ("the SDK stopped it (nothing was approved)" if stopped
            else "stop it, or it waits until Hermes' approval timeout")
    return ApprovalRequiredError(
        f"the run waits for an approval under a {recorder} cassette, which cannot record or replay one: "
        f"{recorder} hands a reply over only once it has read all of it, so the run's events (the approval "
        f"request among them) would reach the SDK only after the run ended; {then}. To {INSTEAD}",
        details={"run_id": run_id, "reason": "buffering_recorder", "recorder": recorder, "run_stopped": stopped})
