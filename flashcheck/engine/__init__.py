"""The engine: how a property run on a case becomes a verdict, and how cases are fuzzed.

- :mod:`flashcheck.engine.verdict`: the verdict of one property on one case, the single
  place where a pass, a decline, a known divergence, a failure or a fatal error is decided;
- :mod:`flashcheck.engine.attribution`: who raised an exception caught around a call into an
  implementation: the implementation (declining the case or not) or flashcheck's own code;
- :mod:`flashcheck.engine.fuzz`: the in-process fuzzer, properties taking turns on cases
  hypothesis draws until a time budget is spent;
- :mod:`flashcheck.engine.fuzz_events`: what a fuzzing run reports as it goes, one type per
  event, in process and from a worker process to its parent alike;
- :mod:`flashcheck.engine.fuzz_workers`: fuzzing in spawned worker processes, where a crash or
  a hang is a finding: the parent's side;
- :mod:`flashcheck.engine.fuzz_worker`: what runs inside one of those worker processes;
- :mod:`flashcheck.engine.crash_store`: the example database folders and the crash store that
  replays crashes and hangs first in the next run;
- :mod:`flashcheck.engine.placement`: how many worker processes, and which GPU each takes;
- :mod:`flashcheck.engine.compile_clock`: a case's time compiling Triton kernels, told apart
  from its running time;
- :mod:`flashcheck.engine.focus`: how many compile classes a fuzz worker draws in, widened
  as its compilations pay off;
- :mod:`flashcheck.engine.interruption`: Ctrl-C from a command's first instruction to its
  exit, for the command line and the worker processes alike;
- :mod:`flashcheck.engine.output_paths`: output files and folders checked writable before any
  work, by a command or the pytest plugin.

Built on the core (:mod:`flashcheck.cases`, :mod:`flashcheck.oracle`, the protocol and the
known divergences), the properties and the implementations' registry; nothing here imports the
command line, which prints what a run reports (:mod:`flashcheck.cli.fuzz_console`). Importing
this package imports nothing, so that the command imports
:mod:`~flashcheck.engine.interruption` before torch.
"""
