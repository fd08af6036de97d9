"""How a worker that died or overran its case is reported (flashcheck.engine.worker_deaths)."""

from __future__ import annotations

import sysconfig

from flashcheck.engine import worker_deaths
from flashcheck.engine.compile_clock import COMPILE_ALLOWANCE


def record(started=0.0, compile_seconds=0.0, compiling_since=None):
    return {"property": "p", "case": "seqlen_q=2", "started": started,
            "compile_seconds": compile_seconds, "compiling_since": compiling_since}


def test_a_fatal_device_error_names_the_case_the_process_ran_before_it():
    """CUDA reports a kernel's fault at a later call, so a fault may belong to the case before."""
    from flashcheck.engine.compile_clock import CaseClock
    from flashcheck.engine.fuzz_worker import FATAL_EXIT

    written = []
    clock = CaseClock(written.append)
    clock.start("out_matches_reference", "seqlen_q=3")
    clock.finish()
    clock.start("layout_invariance", "seqlen_q=5")
    fatal = worker_deaths.crash_failure("impl", FATAL_EXIT, written[-1], None)
    assert fatal.kind == "fatal" and fatal.case == "seqlen_q=5"
    assert "the case this process ran before it: out_matches_reference on seqlen_q=3" in fatal.evidence
    first = worker_deaths.crash_failure("impl", FATAL_EXIT, record(), None)  # its process's first case
    assert "before it" not in first.evidence


def test_a_hang_report_says_whether_the_running_or_the_compiling_overran():
    ran = worker_deaths.hang_failure("impl", 30.0, record(compile_seconds=20.0), 60.0, None)
    assert ran.kind == "hang" and ran.case == "seqlen_q=2"
    assert "longer than the per-case timeout of 30 s besides 20 s of compiling" in ran.evidence
    past_the_allowance = 1.0 + 30 + COMPILE_ALLOWANCE + 5
    stuck = worker_deaths.hang_failure("impl", 30.0, record(compiling_since=1.0), past_the_allowance, None)
    assert f"compiling Triton kernels, past the per-case timeout of 30 s and the {COMPILE_ALLOWANCE:g} s more" \
        in stuck.evidence


def test_a_hang_quotes_the_threads_that_run_the_case_s_code_innermost_frames_first():
    standard_library = sysconfig.get_paths()["stdlib"]
    frames = "".join(f'  File "/site/kernel.py", line {n} in step{n}\n' for n in range(20))
    stacks = (f'Thread 0x01 (most recent call first):\n'
              f'  File "{standard_library}/threading.py", line 327 in wait\n'
              f'  File "{standard_library}/multiprocessing/queues.py", line 231 in _feed\n\n'
              f'Thread 0x02 (most recent call first):\n'
              f'  File "{standard_library}/site-packages/triton/compiler.py", line 442 in make_ptx\n'
              f'  File "{standard_library}/subprocess.py", line 550 in run\n\n'
              f'Current thread 0x03 (most recent call first):\n{frames}')
    hang = worker_deaths.hang_failure("impl", 30.0, record(), 60.0, None, stacks)
    where = hang.evidence.split("\n")[1:]
    assert where[0] == "where its threads were (innermost call first):"
    assert "Thread 0x01" not in hang.evidence, "a queue's feeder thread says nothing about the case"
    assert where[1] == "  Thread 0x02 (most recent call first):", "packages installed beside the standard library count"
    assert where[4] == "  Current thread 0x03 (most recent call first):"
    assert where[5] == '    File "/site/kernel.py", line 0 in step0'
    assert len(where) == 5 + worker_deaths.STACK_FRAMES_QUOTED, "each thread's innermost frames only"


def test_a_hang_without_stacks_says_what_overran_and_nothing_more():
    hang = worker_deaths.hang_failure("impl", 30.0, record(), 60.0, None, "")
    assert hang.evidence == "the case ran longer than the per-case timeout of 30 s; the worker was killed"
