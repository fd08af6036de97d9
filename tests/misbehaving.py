"""Implementations that take their process down, for the fuzzer's crash and hang isolation.

Each wraps the correct pure-torch implementation of :mod:`tests.buggy` and misbehaves on
every case with more than one query, so that a run meets it at once and the smallest
case hypothesis draws first (one query) passes. Float32 only, to keep the runs short.
"""

from __future__ import annotations

import ctypes
import os
import time

from tests import buggy

FEATURES = frozenset({"lse", "float32"})


def _misbehaving(act):
    def attention(q, k, v, **kwargs):
        if q.shape[-3] > 1:
            act()
        return buggy.correct(q, k, v, **kwargs)

    attention.flashcheck_features = FEATURES
    return attention


#: Reads address 0: the process dies with SIGSEGV, as a kernel writing through a wild pointer would.
segfault = _misbehaving(lambda: ctypes.string_at(0))
#: Aborts: the process dies with SIGABRT, as a failed assertion in native code would.
abort = _misbehaving(os.abort)
#: Never returns, as a kernel spinning on a barrier would.
hang = _misbehaving(lambda: time.sleep(10**6))
