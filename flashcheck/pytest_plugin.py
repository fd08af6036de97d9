"""flashcheck's pytest plugin: options, markers, the Triton interpreter switch, GPU pinning.

Installed through the ``pytest11`` entry point, so it is active in every pytest run of an
environment holding flashcheck (``-p no:flashcheck`` turns it off). It provides:

``--flashcheck-impl NAME`` (repeatable)
    the implementations the property suite (:mod:`flashcheck.property_suite`) runs on: a built-in
    name (``flash``, ``sdpa-math``, ``sdpa-flash``, ...) or ``module:attr``; else
    ``$FLASHCHECK_IMPLS`` (comma-separated); else ``flash`` and ``sdpa-math``, plus the
    CUDA-only peers where torch sees a GPU. A name that does not resolve is a usage error.
``--flashcheck-profile NAME``
    the hypothesis settings profile (``ci``, ``dev``, ``gpu``, ``fuzz``, ``smoke``; see
    :mod:`flashcheck.cases.hypothesis_profiles`); else ``$FLASHCHECK_HYPOTHESIS_PROFILE``, else ``ci`` on
    CI, else ``dev``. hypothesis's own ``--hypothesis-profile``, applied later, still wins.
``--flashcheck-size interpreter|gpu``
    the sizes of drawn cases (:mod:`flashcheck.cases.sizes`); by default chosen by the machine.
``--flashcheck-ratio-log PATH``
    append every comparison's worst error/allowed ratio to PATH (JSON lines); else
    ``$FLASHCHECK_RATIO_LOG``.
``--flashcheck-shards N``
    split each property's examples over N tests (``<implementation>-<property>-shardKofN``),
    each drawing its share of the profile's ``max_examples`` (rounded up) from a seed of its
    own, so that pytest-xdist can spread one long property over N workers; else
    ``$FLASHCHECK_SHARDS``; else, in an xdist worker under a profile that is not derandomized,
    about 4 tests per worker (:func:`shard_count`); else 1 (one test per property, ids without
    the suffix).
``--flashcheck-examples N``
    the examples each property draws (split over its shards), instead of the profile's
    ``max_examples``: where a case costs seconds (the project kernel in Triton's interpreter)
    fewer examples keep a run within its time; else ``$FLASHCHECK_EXAMPLES``, else the
    profile's.
``--flashcheck-database DB``
    hypothesis's example database for the property suite: a folder, or a Redis server
    (``redis://HOST:PORT/DB``) multiplexed with the local folder :data:`LOCAL_EXAMPLES`; else
    ``$FLASHCHECK_DATABASE``, else the profile's. Refused with a derandomized profile, which
    keeps no database.
``--run-slow``, ``--run-benchmarks`` and the markers ``gpu``, ``slow`` and ``speed``
    a ``gpu`` test is skipped where torch sees no CUDA device; a ``slow`` test is skipped
    unless ``--run-slow`` is given or the ``-m`` expression names ``slow``; a ``speed``
    test (a speed benchmark) likewise unless ``--run-benchmarks`` is given or ``-m`` names
    ``speed``. (Not pytest-benchmark's own ``benchmark`` marker, which sets per-test
    options: users' benchmarks carrying it are left alone.)

Timing matters, so the work is spread over the hooks by when it must happen:

- importing this module imports nothing heavy: pytest imports it in every run.
- :func:`pytest_load_initial_conftests` runs before any conftest or test module is
  imported. There, in this order: an xdist worker is pinned to its GPU (before anything
  touches CUDA); without CUDA, ``TRITON_INTERPRET=1`` is set (triton reads it when it is
  imported, and ``flashcheck.kernels`` when it is imported); flashcheck's hypothesis
  profiles are registered (before test modules build ``@settings`` objects, and replacing
  hypothesis's own ``ci``) and the chosen one is loaded. A plugin loaded later (from a
  conftest's ``pytest_plugins``) does the same in :func:`pytest_configure`, where it may be
  too late for triton: that is then a usage error, not a silently compiled run.
- :func:`pytest_configure` checks the explicitly chosen implementations, so that a wrong
  name stops the run before any test.

**GPU pinning under pytest-xdist.** Worker ``gwN`` on a machine with ``count`` visible GPUs
takes GPU ``N mod count`` (:func:`flashcheck.engine.placement.worker_pin`), so ``pytest -n
<GPUs>`` gives each worker a GPU of its own. The pin is made by narrowing
``CUDA_VISIBLE_DEVICES`` to that one GPU before CUDA is initialised in the worker
(:func:`flashcheck.engine.placement.pin_this_process`, as for the fuzzer's and corpus runs'
workers): the worker then sees it as ``cuda:0``, and so does every process it spawns (the
fuzzer's isolated workers, compiler subprocesses). The GPUs are counted from
``CUDA_VISIBLE_DEVICES`` or through NVML, neither of which initialises CUDA; where NVML cannot
count them, the worker stays on the GPUs it sees (:mod:`flashcheck.engine.placement` says
why no other pin would do). Each worker reports its GPU; the controller lists them at the
end of the run ("flashcheck devices").
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import sys

import pytest
from hypothesis import settings

from flashcheck.engine import placement

#: Peers that run on CUDA only: in the default selection where torch sees a GPU.
CUDA_ONLY = ("sdpa-flash", "sdpa-efficient", "sdpa-cudnn", "flex")
#: Environment variables read when the corresponding option is not given.
IMPLS_VARIABLE = "FLASHCHECK_IMPLS"
RATIO_LOG_VARIABLE = "FLASHCHECK_RATIO_LOG"
SHARDS_VARIABLE = "FLASHCHECK_SHARDS"
EXAMPLES_VARIABLE = "FLASHCHECK_EXAMPLES"
DATABASE_VARIABLE = "FLASHCHECK_DATABASE"
#: The local folder of the property suite's examples where they are shared through a Redis
#: server (``--flashcheck-database redis://...``, multiplexed with it).
LOCAL_EXAMPLES = ".flashcheck/examples/pytest-suite"

MARKERS = (
    "gpu: needs a CUDA device; skipped where torch sees none",
    "cpu: runs on the CPU through Triton's interpreter; skipped where torch sees CUDA, since the "
    "process's Triton is then compiled for the GPU",
    "slow: long-running; skipped unless --run-slow is given or -m names slow",
    "speed: speed benchmark; skipped unless --run-benchmarks is given or -m names speed",
)


@dataclasses.dataclass
class _State:
    """What this plugin settled for one pytest config (kept in its stash, never in module
    globals, so that nested in-process runs, as pytester makes them, stay apart)."""

    early_done: bool = False
    cuda: bool = False
    previous_hypothesis_profile: str | None = None
    impl_names: tuple[str, ...] = ()
    impl_source: str = "default"
    implementations: dict = dataclasses.field(default_factory=dict)


_STATE = pytest.StashKey[_State]()
_WORKER_DEVICES = pytest.StashKey[dict]()


def _state(config) -> _State:
    return config.stash.setdefault(_STATE, _State())


# -- options and markers ---------------------------------------------------------------------


def pytest_addoption(parser):
    group = parser.getgroup("flashcheck", "flashcheck: property suite for attention kernels")
    group.addoption(
        "--flashcheck-impl", action="append", dest="flashcheck_impl", metavar="NAME", default=None,
        help="implementation the property suite runs on: a built-in name (flash, sdpa-math, sdpa-flash, "
             "sdpa-efficient, sdpa-cudnn, flex) or module:attr; repeatable. Default: $FLASHCHECK_IMPLS "
             "(comma-separated), else flash and sdpa-math (plus the CUDA-only peers on a GPU).",
    )
    group.addoption(
        "--flashcheck-profile", dest="flashcheck_profile", metavar="NAME", default=None,
        help="hypothesis settings profile: ci, dev, gpu, fuzz or smoke. Default: "
             "$FLASHCHECK_HYPOTHESIS_PROFILE, else ci on CI, else dev.",
    )
    group.addoption(
        "--flashcheck-size", dest="flashcheck_size", choices=("interpreter", "gpu"), default=None,
        help="sizes of drawn cases. Default: gpu with CUDA (and no TRITON_INTERPRET=1), else interpreter.",
    )
    group.addoption(
        "--flashcheck-ratio-log", dest="flashcheck_ratio_log", metavar="PATH", default=None,
        help="append each comparison's worst error/allowed ratio to PATH (JSON lines). "
             "Default: $FLASHCHECK_RATIO_LOG.",
    )
    group.addoption(
        "--flashcheck-shards", dest="flashcheck_shards", metavar="N", default=None,
        help="split each property's examples over N tests, each drawing its share from a seed of its "
             "own (spreads a long property over N xdist workers). Default: $FLASHCHECK_SHARDS, else 1.",
    )
    group.addoption(
        "--flashcheck-examples", dest="flashcheck_examples", metavar="N", default=None,
        help="examples each property draws (split over its shards), instead of the hypothesis profile's "
             "max_examples. Default: $FLASHCHECK_EXAMPLES, else the profile's.",
    )
    group.addoption(
        "--flashcheck-repro-dir", dest="flashcheck_repro_dir", metavar="DIR", default=None,
        help="write a standalone reproduction script (torch and the kernel, no flashcheck) for every distinct "
             "failure of the property suite into DIR (created if missing; it must be writable).",
    )
    group.addoption(
        "--flashcheck-database", dest="flashcheck_database", metavar="DB", default=None,
        help="hypothesis's example database for the property suite, so that failures found are replayed "
             "first next time: a folder, or a Redis server several machines share, redis://HOST:PORT/DB "
             f"(needs flashcheck[redis]), multiplexed with the local folder {LOCAL_EXAMPLES}. Only with a "
             f"profile that draws new cases (dev, gpu, fuzz). Default: ${DATABASE_VARIABLE}, else the profile's.",
    )
    group.addoption(
        "--run-slow", action="store_true", dest="run_slow", default=False,
        help="run tests marked slow (also run when the -m expression names slow).",
    )
    group.addoption(
        "--run-benchmarks", action="store_true", dest="run_benchmarks", default=False,
        help="run tests marked speed (also run when the -m expression names speed).",
    )


# -- before conftests: GPU pin, interpreter switch, hypothesis profiles -----------------------


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    _early_setup(early_config, early_config.known_args_namespace)


def _early_setup(config, options) -> None:
    state = _state(config)
    if state.early_done:
        return
    state.early_done = True
    _pin_xdist_worker(os.environ.get("PYTEST_XDIST_WORKER"))

    import torch  # after the pin: counting through NVML leaves CUDA uninitialised

    state.cuda = torch.cuda.is_available()
    _use_interpreter_without_cuda(state.cuda)
    _load_hypothesis_profile(state, getattr(options, "flashcheck_profile", None))
    _use_example_database(getattr(options, "flashcheck_database", None))


def _use_interpreter_without_cuda(cuda: bool) -> None:
    """Without CUDA the Triton kernels run in Triton's CPU interpreter, which must be chosen
    before triton is imported."""
    if cuda or os.environ.get("TRITON_INTERPRET") == "1":
        return
    if "triton" in sys.modules:
        raise pytest.UsageError(
            "triton was imported before flashcheck's pytest plugin could set TRITON_INTERPRET=1 "
            "(load the plugin through its entry point or -p flashcheck.pytest_plugin, not a conftest), "
            "or export TRITON_INTERPRET=1 before running pytest on a machine without CUDA"
        )
    os.environ["TRITON_INTERPRET"] = "1"


def _load_hypothesis_profile(state: _State, name: str | None) -> None:
    from hypothesis import settings
    from hypothesis.errors import InvalidArgument

    from flashcheck.cases import hypothesis_profiles

    state.previous_hypothesis_profile = settings.get_current_profile_name()
    hypothesis_profiles.register_hypothesis_profiles()
    try:
        hypothesis_profiles.load_hypothesis_profile(name)
    except InvalidArgument as error:
        source = "--flashcheck-profile" if name is not None else f"${hypothesis_profiles.PROFILE_VARIABLE}"
        raise pytest.UsageError(
            f"{source}: unknown hypothesis profile {hypothesis_profiles.hypothesis_profile_name(name)!r}; "
            f"expected one of {', '.join(hypothesis_profiles.HYPOTHESIS_PROFILES)} ({error})"
        ) from None


def _use_example_database(given: str | None) -> None:
    """Load the current hypothesis profile with the example database of
    ``--flashcheck-database`` (else ``$FLASHCHECK_DATABASE``), a folder or a Redis URL; nothing
    without either. A derandomized profile, a malformed URL, a server that does not answer or
    a folder that cannot be written is a ``pytest.UsageError`` naming the option, before any
    test."""
    source = "--flashcheck-database"
    if given is None:
        given, source = os.environ.get(DATABASE_VARIABLE) or None, f"${DATABASE_VARIABLE}"
    if given is None:
        return
    from hypothesis import settings

    from flashcheck.engine import crash_store, shared_database
    from flashcheck.engine.output_paths import check_writable_folder

    profile = settings.get_current_profile_name()
    if settings().derandomize:
        raise pytest.UsageError(
            f"{source}: the hypothesis profile {profile!r} is derandomized (the same cases on every run) and keeps "
            f"no example database; give it with a profile that draws new cases (dev, gpu or fuzz)")
    try:
        folder, shared = shared_database.local_and_shared(given, LOCAL_EXAMPLES, source)
        check_writable_folder(folder, source)
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None
    database = crash_store.example_database(folder, shared)
    settings.register_profile(f"{profile}+database", parent=settings.get_profile(profile), database=database)
    settings.load_profile(f"{profile}+database")


# -- GPU pinning under xdist -----------------------------------------------------------------

_WORKER_ID = re.compile(r"gw(\d+)")


def xdist_worker_number(worker_id: str | None) -> int | None:
    """The number ``N`` of pytest-xdist worker ``"gwN"``; None outside xdist (``worker_id``
    None or not ``gwN``, e.g. ``"master"``)."""
    match = _WORKER_ID.fullmatch(worker_id or "")
    return None if match is None else int(match.group(1))


def _pin_xdist_worker(worker_id: str | None) -> None:
    """Pin this process to its GPU if it is an xdist worker: worker ``gwN`` takes visible GPU
    ``N mod count`` (:mod:`flashcheck.engine.placement`), the GPUs counted without initialising
    CUDA; where they cannot be counted so, the worker stays on the GPUs it sees."""
    number = xdist_worker_number(worker_id)
    if number is None:
        return
    gpus = placement.gpus_before_cuda()
    if gpus is not None:
        placement.pin_this_process(placement.worker_pin(number, gpus))


# -- configure: markers, implementations ------------------------------------------------------


#: The Triton interpreter's numpy calls warn by the thousand (deprecations; overflow in
#: planted-bug kernels, by design); they say nothing about the code under test.
INTERPRETER_WARNINGS = (
    "ignore::DeprecationWarning:triton.runtime.interpreter",
    "ignore::RuntimeWarning:triton.runtime.interpreter",
)


def pytest_configure(config):
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)
    for warning_filter in INTERPRETER_WARNINGS:
        config.addinivalue_line("filterwarnings", warning_filter)
    _early_setup(config, config.option)  # a no-op unless the plugin was loaded late
    state = _state(config)
    state.impl_names, state.impl_source = _chosen_implementations(config, state.cuda)
    shard_count(config)  # a bad count stops the run here, before any test
    example_count(config)
    repro_dir(config)
    if state.impl_source != "default":
        for name in state.impl_names:
            implementation(config, name)  # a wrong name stops the run here, before any test
    if hasattr(config, "workeroutput"):  # an xdist worker: tell the controller where it ran
        config.workeroutput["flashcheck_device"] = placement.describe_device("cuda" if state.cuda else "cpu")


def pytest_unconfigure(config):
    # Leave hypothesis as it was found (matters for in-process nested runs).
    state = config.stash.get(_STATE, None)
    if state is not None and state.previous_hypothesis_profile is not None:
        from hypothesis import settings

        settings.load_profile(state.previous_hypothesis_profile)


def _chosen_implementations(config, cuda: bool) -> tuple[tuple[str, ...], str]:
    given = config.getoption("flashcheck_impl")
    if given:
        return tuple(dict.fromkeys(given)), "--flashcheck-impl"
    from_env = [name.strip() for name in os.environ.get(IMPLS_VARIABLE, "").split(",") if name.strip()]
    if from_env:
        return tuple(dict.fromkeys(from_env)), f"${IMPLS_VARIABLE}"
    return ("flash", "sdpa-math") + (CUDA_ONLY if cuda else ()), "default"


def implementation_names(config) -> tuple[str, ...]:
    """The implementations the property suite runs on, in the order chosen."""
    return _active_state(config).impl_names


def implementation(config, name: str):
    """The implementation called ``name`` (resolved once per run); a name that does not
    resolve (a module that raises at import included) or that declares a feature the
    protocol does not have is a ``pytest.UsageError`` naming where it came from."""
    state = _active_state(config)
    if name not in state.implementations:
        from flashcheck import autotune_pin, peers, protocol

        try:
            impl = peers.resolve(name)
            protocol.check_declaration(impl)
            autotune_pin.forced_entries()  # a malformed FLASHCHECK_AUTOTUNE_CONFIG
            protocol.prepare(impl)
        except (ValueError, ImportError) as error:
            raise pytest.UsageError(f"{state.impl_source} {name!r}: {error}") from None
        state.implementations[name] = impl
    return state.implementations[name]


def drawn_sizes(config):
    """The :class:`flashcheck.cases.sizes.CaseSizes` chosen by ``--flashcheck-size``, or by
    the machine."""
    from flashcheck.cases import sizes as case_sizes

    return case_sizes.choose(config.getoption("flashcheck_size", None))


def ratio_log_path(config) -> str | None:
    """Where to append error/allowed ratios (an absolute path), or None."""
    path = config.getoption("flashcheck_ratio_log", None) or os.environ.get(RATIO_LOG_VARIABLE)
    return os.path.abspath(path) if path else None


#: Tests per xdist worker that automatic sharding aims at: enough that the longest property's
#: share is a small part of a worker's run, so that no worker runs one property's examples alone
#: long after the others have finished.
TESTS_PER_WORKER = 4
#: The most tests automatic sharding splits one property's examples over.
MAX_AUTO_SHARDS = 8


def shard_count(config, tests: int = 1, *, derandomized: bool | None = None) -> int:
    """How many tests each property's examples are split over: ``--flashcheck-shards``, else
    ``$FLASHCHECK_SHARDS`` (anything but a positive integer is a ``pytest.UsageError`` naming
    where it came from); else, in a pytest-xdist worker under a profile that draws new cases
    (not derandomized), as many as make about :data:`TESTS_PER_WORKER` tests per worker out of
    ``tests`` unsplit property tests (at most :data:`MAX_AUTO_SHARDS`); else 1. ``derandomized``:
    whether the profile is (None: the active profile's setting).

    A whole property's examples in one xdist worker can keep that worker busy long after the
    others are done: on a GPU, 50 examples of one property compiling new kernel variants (the
    pytest path measured in docs/performance.md). A derandomized profile is never split
    automatically: its shards draw from seeds of their own, and the cases a gate draws must not
    depend on how many workers run it."""
    given = _positive_option(config, "flashcheck_shards", SHARDS_VARIABLE, "tests per property")
    if given is not None:
        return given
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    if workers <= 1 or (settings.default.derandomize if derandomized is None else derandomized):
        return 1
    return max(1, min(MAX_AUTO_SHARDS, math.ceil(TESTS_PER_WORKER * workers / max(1, tests))))


def example_count(config) -> int | None:
    """How many examples each property draws (``--flashcheck-examples``, else
    ``$FLASHCHECK_EXAMPLES``), or None for the active hypothesis profile's ``max_examples``;
    anything but a positive integer is a ``pytest.UsageError`` naming where it came from."""
    return _positive_option(config, "flashcheck_examples", EXAMPLES_VARIABLE, "examples per property")


def repro_dir(config) -> str | None:
    """Where the property suite writes a standalone script per distinct failure
    (``--flashcheck-repro-dir``, an absolute path), or None; a path that cannot be made a
    writable folder is a ``pytest.UsageError`` naming the option, before any test."""
    from flashcheck.engine.output_paths import check_writable_folder

    given = config.getoption("flashcheck_repro_dir", None)
    if given is None:
        return None
    try:
        check_writable_folder(given, "--flashcheck-repro-dir")
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None
    return os.path.abspath(given)


def _positive_option(config, dest: str, variable: str, what: str) -> int | None:
    """The positive integer given as the option ``dest``, else in ``$variable``, else None."""
    given = config.getoption(dest, None)
    source = "--" + dest.replace("_", "-")
    if given is None:
        given, source = os.environ.get(variable), f"${variable}"
        if not given:
            return None
    try:
        count = int(given)
    except ValueError:
        count = 0
    if count < 1:
        raise pytest.UsageError(f"{source}: expected a positive integer ({what}), got {given!r}")
    return count


def _active_state(config) -> _State:
    state = config.stash.get(_STATE, None)
    if state is None or not state.early_done:
        raise pytest.UsageError("the flashcheck pytest plugin is not active (was it disabled with -p no:flashcheck?)")
    return state


# -- markers at collection ----------------------------------------------------------------------


def _names(markexpr: str | None, marker: str) -> bool:
    return bool(markexpr) and re.search(rf"\b{marker}\b", markexpr) is not None


def pytest_collection_modifyitems(config, items):
    state = _state(config)
    markexpr = config.getoption("markexpr", None)
    run_slow = config.getoption("run_slow") or _names(markexpr, "slow")
    run_benchmarks = config.getoption("run_benchmarks") or _names(markexpr, "speed")
    no_gpu = pytest.mark.skip(reason="marked gpu: needs a CUDA device, and torch sees none")
    not_cpu = pytest.mark.skip(reason="marked cpu: needs Triton's interpreter, and this process's Triton "
                                      "runs on the CUDA device torch sees")
    not_slow = pytest.mark.skip(reason="marked slow: run with --run-slow or -m slow")
    not_benchmark = pytest.mark.skip(reason="marked speed: run with --run-benchmarks or -m speed")
    for item in items:
        if not state.cuda and item.get_closest_marker("gpu") is not None:
            item.add_marker(no_gpu)
        if state.cuda and item.get_closest_marker("cpu") is not None:
            item.add_marker(not_cpu)
        if not run_slow and item.get_closest_marker("slow") is not None:
            item.add_marker(not_slow)
        if not run_benchmarks and item.get_closest_marker("speed") is not None:
            item.add_marker(not_benchmark)
    # Each xdist worker collects, and all must order alike: the count is the same in every one.
    # (The scheduler's name is not: a worker sees --dist as "no".)
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    if workers > 1:
        items[:] = long_tests_first(items, workers)


# -- the order of the tests under pytest-xdist ---------------------------------------------------


def property_test_weight(item) -> int:
    """A rough cost of ``item``: 0 for a test that is not one of the property suite's, else 1,
    plus 2 for a property that runs the backward (where the implementation has one, for those
    that only use it: :meth:`~flashcheck.properties.registry.Property.exercises`) and 2 for one
    that packs sequences (on a GPU the backward and the per-sequence calls each compile kernel
    variants of their own)."""
    from flashcheck.properties import PROPERTIES  # at collection: the plugin itself imports no torch

    params = getattr(getattr(item, "callspec", None), "params", {})
    prop = PROPERTIES.get(params.get("property_name")) if "shard" in params else None
    if prop is None:
        return 0
    return 1 + 2 * prop.exercises("backward") + 2 * prop.exercises("varlen")


def worker_shares(count: int, workers: int) -> list[int]:
    """How many of ``count`` tests pytest-xdist's worksteal scheduler first hands each of
    ``workers`` workers, as consecutive runs of the collection in worker order (each idle
    worker gets the pending tests divided by the workers left; later it steals from the end of
    the longest queue)."""
    shares, left = [], count
    for index in range(workers):
        shares.append(left // (workers - index))
        left -= shares[-1]
    return shares


def long_tests_first(items: list, workers: int, weight=property_test_weight) -> list:
    """``items`` reordered so that each worker's first share (:func:`worker_shares`) starts
    with its part of the long tests, dealt heaviest first to the least loaded worker; the
    others keep their order. Collected in the suite's order, one worker got every property test
    (they are consecutive) and the others stole them only once their own were done: on a GPU
    the longest properties then started minutes late and ran alone at the end. A speed
    heuristic only, shaped by worksteal's first split (``--dist load`` hands out smaller runs,
    which still find the long tests spread rather than together): every test still runs
    exactly once, whatever the scheduler does."""
    weights = [weight(item) for item in items]
    heavy = sorted((index for index, w in enumerate(weights) if w > 0), key=lambda index: -weights[index])
    if not heavy:
        return items
    shares = worker_shares(len(items), workers)
    fronts: list[list[int]] = [[] for _ in range(workers)]
    loads = [0] * workers
    for index in heavy:
        open_workers = [worker for worker in range(workers) if len(fronts[worker]) < shares[worker]]
        worker = min(open_workers, key=lambda candidate: (loads[candidate], candidate))
        fronts[worker].append(index)
        loads[worker] += weights[index]
    light = iter(index for index, w in enumerate(weights) if w == 0)
    order = []
    for worker in range(workers):
        order += fronts[worker] + [next(light) for _ in range(shares[worker] - len(fronts[worker]))]
    return [items[index] for index in order]


# -- reporting ----------------------------------------------------------------------------------


def pytest_report_header(config):
    from hypothesis import settings

    state = _state(config)
    return [
        # The profile as hypothesis has it now: its own --hypothesis-profile may have replaced ours.
        f"flashcheck: implementations {', '.join(state.impl_names)} ({state.impl_source}); "
        f"hypothesis profile {settings.get_current_profile_name()}; sizes {drawn_sizes(config).name}; "
        f"device {placement.describe_device('cuda' if state.cuda else 'cpu')}"
    ]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """xdist controller: remember where each worker ran."""
    device = getattr(node, "workeroutput", {}).get("flashcheck_device")
    if device is not None:
        node.config.stash.setdefault(_WORKER_DEVICES, {})[node.gateway.id] = device


def pytest_terminal_summary(terminalreporter, config):
    devices = config.stash.get(_WORKER_DEVICES, None)
    if devices:
        terminalreporter.section("flashcheck devices")
        for worker in sorted(devices, key=lambda w: (len(w), w)):
            terminalreporter.line(f"{worker}: {devices[worker]}")
    for user_property, title, saying in (
            ("flashcheck_declined", "flashcheck declined cases (not checked)", "{count} declined: {what}"),
            ("flashcheck_not_checked", "flashcheck parts of passed cases not checked",
             "not checked on {count} passed cases: {what}")):
        found = counts_by_test(terminalreporter.stats, user_property)
        if found:
            terminalreporter.section(title)
        for nodeid, counts in found:
            for what, count in sorted(counts.items(), key=lambda item: -item[1]):
                terminalreporter.line(f"{nodeid}: {saying.format(count=count, what=what)}")
    declared = declared_not_applicable(terminalreporter.stats)
    if declared:
        terminalreporter.section("flashcheck properties declared not applicable (not run)")
        for nodeid, reason in declared:
            terminalreporter.line(f"{nodeid}: {reason}")


def declared_not_applicable(stats) -> list[tuple[str, str]]:
    """``(test id, reason)`` for each property test skipped because its implementation
    declares the property not applicable (``flashcheck_not_applicable``; the skip's reason
    carries :data:`flashcheck.engine.property_cases.DECLARED`), from the skipped reports."""
    skips = {}
    for report in stats.get("skipped", ()):
        longrepr = getattr(report, "longrepr", None)
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr or "")
        if "not applicable to " in reason:  # the suite's skips (flashcheck.property_suite)
            skips[report.nodeid] = reason
    if not skips:
        return []
    from flashcheck.engine.property_cases import DECLARED  # imported only after a run of the suite: it imports torch

    return sorted((nodeid, reason[reason.index(DECLARED):]) for nodeid, reason in skips.items() if DECLARED in reason)


def counts_by_test(stats, user_property: str) -> list[tuple[str, dict]]:
    """``(test id, {what: count})`` for each property test that recorded the user property
    ``user_property`` (which pytest-xdist carries back from its workers): ``flashcheck_declined``,
    the cases its implementation declined (``NotImplementedError``) by reason;
    ``flashcheck_not_checked``, what its passed cases could not check."""
    found = {}
    for reports in stats.values():
        for report in reports:
            if getattr(report, "when", None) != "call":
                continue
            for name, value in getattr(report, "user_properties", ()):
                if name == user_property:
                    found[report.nodeid] = dict(value)
    return sorted(found.items())
