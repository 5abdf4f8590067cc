"""Long-running commands stop on SIGINT and SIGTERM, whatever disposition they inherited.

A process started with ``cmd &`` from a script inherits SIGINT *ignored* (and Python then installs
no KeyboardInterrupt handler for it), and SIGTERM by default ends Python without running any
``finally``: a server started that way could not be stopped with ``kill -INT``, and ``kill`` left
its clean-up undone. Inside :func:`interrupt_on_signals` both raise KeyboardInterrupt in the main
thread, so the command's ordinary Ctrl-C path (stop the server, print nothing more) runs.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from types import FrameType
from typing import Callable, Iterator, Optional, Union

STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM") if hasattr(signal, name))


#: What ``signal.signal`` returns and takes: a handler, ``SIG_DFL`` / ``SIG_IGN``, or None (set from C).
_Handler = Union[Callable[[int, Optional[FrameType]], object], int, signal.Handlers, None]


def _interrupt(signum: int, frame: Optional[FrameType]) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


@contextlib.contextmanager
def interrupt_on_signals() -> Iterator[None]:
    """SIGINT and SIGTERM raise KeyboardInterrupt while inside; the previous handlers come back after.

    Only the main thread can set handlers: elsewhere (an emulator served from a test's thread)
    this changes nothing.
    """
    previous: dict[int, _Handler] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in STOP_SIGNALS:
            try:
                previous[signum] = signal.signal(signum, _interrupt)
            except (ValueError, OSError):  # pragma: no cover - an embedded interpreter without signals
                pass
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
