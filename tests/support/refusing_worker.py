"""An implementation that imports in the process that runs ``flashcheck fuzz`` but not in its
spawned workers: the fuzzer must report a setup error (exit 2), not a finding."""

import multiprocessing

if multiprocessing.parent_process() is not None:
    raise ImportError("this module refuses to load in a worker process")

from tests.support.buggy import correct as attention  # noqa: E402,F401
