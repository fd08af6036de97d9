"""Ctrl-C (SIGINT), and SIGTERM alike, from a command's first instruction to its exit.

SIGTERM is what ``timeout``, CI runners and container runtimes send at a job's time limit: a
command answers it as it answers Ctrl-C (:data:`SIGNALS`), reporting what it found, so that a
run cut short by its job keeps it. "SIGINT" below stands for either.

Python's own handler raises ``KeyboardInterrupt`` wherever the main thread happens to be. In
a command's first second that is inside ``import torch``: outside any handler of
flashcheck's (the command printed a traceback), or inside a library's broad ``except``,
which swallowed it (the command then ran its whole budget, the Ctrl-C forgotten).

:func:`installed` replaces that handler, for as long as a command runs, with one that first
records the request and then raises, so that :func:`check`, called at the end of each
stretch of start-up (the device chosen, the implementation loaded), raises it again where a
library swallowed it. :func:`deferred` records without raising, for stretches that must not
be cut short: the command's own imports before its arguments are parsed, and the reporting
of what a run found (a second Ctrl-C must not lose the summary or the ``--json`` file).

This module imports nothing but the standard library: the command imports it first.
"""

from __future__ import annotations

import contextlib
import signal
import threading

#: The signals that ask a command to stop, each answered as Ctrl-C is.
SIGNALS = tuple(number for number in (signal.SIGINT, getattr(signal, "SIGTERM", None)) if number is not None)

_requested = threading.Event()


def handle(handler) -> dict:
    """Set ``handler`` for every one of :data:`SIGNALS`; returns the handlers it replaced, for
    :func:`restore`. Only the main thread can set them: elsewhere it sets none and returns ``{}``."""
    if not _in_main_thread():
        return {}
    return {number: signal.signal(number, handler) for number in SIGNALS}


def restore(previous: dict) -> None:
    """Put back the handlers :func:`handle` replaced (one set outside Python stays as it is)."""
    for number, handler in previous.items():
        if handler is not None:
            signal.signal(number, handler)


def _record(signum, frame) -> None:
    _requested.set()


def _record_and_raise(signum, frame) -> None:
    _requested.set()
    raise KeyboardInterrupt


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()  # elsewhere signals cannot be set


@contextlib.contextmanager
def installed():
    """For the duration: SIGINT records itself and then raises ``KeyboardInterrupt``. No
    request is pending on entry; none is left behind on exit, when the previous handler
    comes back. Starts out :func:`deferred`-like until :func:`arm` (a command's imports and
    argument parsing take milliseconds, and a Ctrl-C among them is answered by :func:`arm`)."""
    _requested.clear()
    previous = handle(_record)
    try:
        yield
    finally:
        restore(previous)
        _requested.clear()


def arm() -> None:
    """From now on SIGINT raises ``KeyboardInterrupt`` at once (after recording itself); raises
    it now if one came while it was only recorded."""
    handle(_record_and_raise)
    check()


def requested() -> bool:
    """Whether a SIGINT came since :func:`installed` was entered."""
    return _requested.is_set()


def check() -> None:
    """Raise ``KeyboardInterrupt`` if a SIGINT came, even one whose ``KeyboardInterrupt``
    something caught and dropped (a library's ``except BaseException`` during an import)."""
    if _requested.is_set():
        raise KeyboardInterrupt


@contextlib.contextmanager
def deferred():
    """For the duration SIGINT is only recorded (:func:`requested` says whether one came);
    the handler before comes back on exit, without raising for what was recorded."""
    previous = handle(_record)
    try:
        yield
    finally:
        restore(previous)
