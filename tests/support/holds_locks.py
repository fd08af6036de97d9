"""A correct implementation whose module makes multiprocessing locks at import, as FlagGems'
``LibEntry`` does for every kernel it wraps: a worker killed rather than let exit leaves them to
multiprocessing's resource tracker, which reports them as leaked when the run ends."""

import multiprocessing

from tests.support.buggy import correct

LOCKS = [multiprocessing.Lock() for _ in range(8)]

attention = correct
