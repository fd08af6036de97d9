"""Triton autotuners run one of their configurations per compiled variant, chosen from the
call, instead of timing every one of them: in plain Python and triton.

Used for a library's autotuners by its adapter (FlagGems' SDPA, :mod:`flashcheck.peers.flaggems_call`)
and for those an implementation declares in ``flashcheck_autotuners`` (docs/protocol.md,
:func:`flashcheck.protocol.autotuners_of`).

An autotuner compiles and times each of its configurations for every new key (FlagGems' SDPA
forward: 45 for every new key length, each compiled again for every new Triton specialisation),
which bounds a fuzzer to a few cases a minute from a cold cache. Pinned (:func:`pin_autotuners`),
a call runs the configuration at a position computed from what selects its compiled variant: the
autotuner's key values with the dtypes of the tensor arguments (as the autotuner keys its own
choice) and the values of the kernel's ``tl.constexpr`` arguments. So

- a case compiles one configuration, not all of them, and times none;
- every configuration the library ships is run over a campaign, not only the one that wins the
  timing on this GPU (another GPU's timing may pick any of them);
- the choice is a pure function of the call: the same call runs the same configuration in every
  process, so that a replay or a standalone script (which carries this module's source, see
  :mod:`flashcheck.repro.calls`) runs what the fuzzer ran;
- one position in ``len(candidates) + 1`` leaves the choice to the library's own autotuner, so
  that what its timing and its cache do (reusing a choice across calls, say) is still reached;
  none under Triton's interpreter, where an autotuner cannot time (:func:`own_timing_possible`).

The candidates are the configurations the autotuner's ``early_config_prune`` keeps for the call.
A configuration the autotuner would skip while timing (a compile-time assertion, too little shared
memory, ptxas refusing it) is skipped the same way, for the next one in order: a pinned call raises
only where every candidate does. The configuration that runs is the variant's, whatever Triton's
specialisation of the call (its arguments' alignment), as the library's own autotuner keeps one
choice per key: two calls of one variant in different layouts run the same configuration, so that
comparing their results bit for bit compares the kernel, not two configurations. Where a
specialisation refuses the variant's configuration (an aligned call pipelines its loads and needs
more shared memory than an unaligned one), the variant *moves* to the next configuration in order
that runs, for every later call of it; :func:`moves` counts such moves, so that a check whose
calls straddled one can be decided again (:func:`flashcheck.engine.verdict.decide`); a wrapper
that remembers which compiled kernel each specialisation ran (FlagGems' ``LibEntry``) forgets it
when pinned and at a move, so that the pin and its moves reach every later call
(:data:`WRAPPER_KERNEL_CACHES`). Refusals are
remembered per specialisation and not compiled again. Each choice and each move is printed to
stderr once per process, naming the kernel and the configuration, so that a failure's log says
what ran.

The environment variable :data:`FORCED` overrides the choice, for triage: ``library`` leaves every
call to the library's own autotuning (as its users run it), a number N runs the N-th
configuration of the autotuner's list for every call (refused or not: what it raises is the
call's), and ``KERNEL=VALUE`` entries, comma-separated, do either for one kernel alone. Run a
failure's script once per configuration, each in a process of its own, to learn which
configurations it needs.
"""

import importlib
import inspect
import os
import sys
import zlib

#: The attribute that marks an autotuner pinned (an id could be reused by a new object).
_MARK = "_flashcheck_pinned"
#: The modules whose autotuners were already pinned in this process.
_SEARCHED: set = set()
#: The choices already printed in this process: (kernel name, digest, what).
_ANNOUNCED: set = set()
#: How many times in this process a variant's configuration moved after running (:func:`moves`).
_MOVES = [0]
#: The environment variable that forces the choice (module docstring).
FORCED = "FLASHCHECK_AUTOTUNE_CONFIG"
#: What :data:`FORCED` holds to leave every call to the library's own autotuning.
LIBRARY = "library"


def pin_autotuners(module_name: str, names: tuple) -> int:
    """Pin the Triton autotuners ``module_name.<name>`` for each of ``names``, each an autotuner
    or a wrapper that holds one as ``.fn`` (FlagGems' ``LibEntry``). Once per module and process
    (the module imported by then); returns how many it pinned in this call. A module that cannot
    be imported, or a name that holds no autotuner (the library changed), is said once on stderr
    and runs as the library tunes it."""
    if module_name in _SEARCHED:
        return 0
    _SEARCHED.add(module_name)
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        print(f"autotune pin: cannot import {module_name}; its kernels run as the library tunes them", file=sys.stderr)
        return 0
    pinned = 0
    for name in names:
        value = getattr(module, name, None)
        tuner = autotuner_in(value)
        if tuner is None:
            print(f"autotune pin: {module_name}.{name} holds no Triton autotuner; it runs as the library tunes it",
                  file=sys.stderr)
        elif not getattr(tuner, _MARK, False):
            pin(value)
            pinned += 1
    return pinned


def autotuner_in(value):
    """The Triton autotuner (``triton.runtime.Autotuner``) ``value`` is, or holds through ``.fn``
    a few levels down (a wrapper such as FlagGems' ``LibEntry``), or None."""
    from triton.runtime.autotuner import Autotuner

    return next((inner for inner in _fn_chain(value) if isinstance(inner, Autotuner)), None)


def pin(value) -> None:
    """Pin one autotuner (a ``triton.runtime.Autotuner``, FlagGems' ``LibTuner`` included), given
    itself or a wrapper that holds it through ``.fn`` (:func:`autotuner_in`): its ``run`` replaced
    on the instance by one that narrows ``configs`` to the chosen configuration for the call (an
    autotuner given one configuration runs it without timing) and restores them. The wrappers
    between ``value`` and the autotuner forget the compiled kernels they remember
    (:data:`WRAPPER_KERNEL_CACHES`) when it is pinned and whenever a variant moves, so that every
    later call reaches the autotuner.
    ValueError where ``value`` holds no autotuner."""
    tuner = autotuner_in(value)
    if tuner is None:
        raise ValueError(f"{value!r:.80} holds no Triton autotuner")
    if getattr(tuner, _MARK, False):
        return
    chain = list(_fn_chain(value))
    wrappers = chain[:next(index for index, held in enumerate(chain) if held is tuner)]
    _forget_compiled(wrappers)  # calls made before the pin would go on running what the library chose
    from triton.compiler.errors import CompileTimeAssertionFailure
    from triton.runtime.errors import OutOfResources, PTXASError

    skipped_by_the_autotuner = (OutOfResources, CompileTimeAssertionFailure, PTXASError)
    library_run = tuner.run  # the class's method, bound
    configs = list(tuner.configs)
    constexprs = _constexpr_names(tuner)
    kernel = kernel_name(tuner)
    forced = forced_choice(kernel, len(configs))
    # The configuration each variant runs: digest -> (its order of candidates, the position in it
    # of the configuration chosen), or None where the library's own timing chooses. The
    # candidates are pruned once per variant (the autotuner itself prunes once per key).
    chosen = {}
    # What each specialisation of a variant refused: (digest, specialisation) -> positions in the
    # variant's order, so that a refused configuration is not compiled again there.
    refused = {}

    def run_with(config, args, kwargs):
        tuner.configs = [config]
        try:
            return library_run(*args, **kwargs)
        finally:
            tuner.configs = configs

    def run(*args, **kwargs):
        if forced == LIBRARY:
            _announce(kernel, None, f"the library's own autotuning (forced by {FORCED})")
            return library_run(*args, **kwargs)
        if forced is not None:
            config = configs[forced - 1]
            _announce(kernel, None, f"configuration {forced} of {len(configs)}: {config} (forced by {FORCED})")
            return run_with(config, args, kwargs)
        named = {**dict(zip(tuner.arg_names, args)), **kwargs}
        digest = zlib.crc32(repr((kernel, _variant(tuner, named, constexprs))).encode())
        if digest not in chosen:
            candidates = _candidates(tuner, configs, args, kwargs)
            start = digest % (len(candidates) + (1 if own_timing_possible() else 0))
            if len(configs) <= 1 or start == len(candidates):
                chosen[digest] = None
            else:
                chosen[digest] = (candidates[start:] + candidates[:start], None)
        if chosen[digest] is None:
            _announce(kernel, digest, "the library's own autotuning")
            return library_run(*args, **kwargs)
        order, ran = chosen[digest]
        skip = refused.setdefault((digest, _specialisation(named)), set())
        # From the variant's configuration on, round the order (a configuration before it that
        # another specialisation refused may run in this one); where this specialisation refused
        # them all before, the first is run again, and what it raises is the call's.
        positions = [((ran or 0) + step) % len(order) for step in range(len(order))]
        untried = [position for position in positions if position not in skip] or positions[:1]
        for position in untried:
            try:
                result = run_with(order[position], args, kwargs)
            except skipped_by_the_autotuner:
                skip.add(position)
                if position == untried[-1]:
                    raise
                continue
            moved = ran is not None and position != ran
            if moved:
                _MOVES[0] += 1
                _forget_compiled(wrappers)
            _announce(kernel, digest, f"configuration {_label(configs, order[position])}" + (
                f", moved from {_label(configs, order[ran])}, which a call of another alignment refused"
                if moved else ""))
            chosen[digest] = (order, position)
            return result
        raise AssertionError("unreachable: the last untried position raises or returns")

    tuner.run = run
    setattr(tuner, _MARK, True)


#: Where a wrapper above an autotuner remembers the compiled kernel each call ran, keyed on the
#: call's specialisation, so that a later call of that specialisation skips the autotuner:
#: FlagGems' ``LibEntry.kernel_cache``, a dict per device. A variant's move must reach those calls
#: too, or a specialisation that ran before the move would go on running the old configuration.
WRAPPER_KERNEL_CACHES = ("kernel_cache",)


def _forget_compiled(wrappers) -> None:
    """Empty the compiled-kernel caches (:data:`WRAPPER_KERNEL_CACHES`) of ``wrappers``: each
    later call goes through the autotuner again, which finds its kernel compiled already."""
    for wrapper in wrappers:
        for name in WRAPPER_KERNEL_CACHES:
            cache = getattr(wrapper, name, None)
            for per_device in cache if isinstance(cache, (tuple, list)) else (cache,):
                if isinstance(per_device, dict):
                    per_device.clear()


def moves() -> int:
    """How many times in this process a pinned variant moved to another configuration after one of
    its calls ran (a specialisation refused the variant's configuration): a check whose calls
    straddle a move ran two configurations (module docstring)."""
    return _MOVES[0]


def _label(configs: list, config) -> str:
    return f"{configs.index(config) + 1} of {len(configs)}: {config}"


def forced_entries() -> dict:
    """:data:`FORCED` read: kernel name (None: every kernel) -> :data:`LIBRARY` or a
    configuration's 1-based position; empty where the variable is unset. ValueError, one line
    naming the variable and what it expects, for anything else."""
    text = os.environ.get(FORCED, "").strip()
    entries = {}
    for entry in (part.strip() for part in text.split(",") if part.strip()):
        name, named, value = (part.strip() for part in entry.rpartition("="))
        value = LIBRARY if value == LIBRARY else int(value) if value.isdigit() and int(value) >= 1 else None
        if value is None or (named and not name):
            raise ValueError(f"{FORCED} must be {LIBRARY!r}, a configuration's number from 1, or comma-separated "
                             f"KERNEL={LIBRARY}|NUMBER entries; got {text!r}")
        entries[name if named else None] = value
    return entries


def forced_choice(kernel: str, count: int):
    """What :data:`FORCED` forces for ``kernel``, an autotuner of ``count`` configurations:
    :data:`LIBRARY`, a configuration's 1-based position, or None (nothing forced: the pinned
    choice); an entry naming the kernel before one for every kernel. ValueError, one line naming
    the variable, for a malformed value (:func:`forced_entries`) or a position past ``count``."""
    entries = forced_entries()
    chosen = entries.get(kernel, entries.get(None))
    if isinstance(chosen, int) and chosen > count:
        raise ValueError(f"{FORCED} asks configuration {chosen} of {kernel}, which has {count}")
    return chosen


def own_timing_possible() -> bool:
    """Whether an autotuner can time its configurations here: not under Triton's interpreter,
    whose benchmarker finds no GPU driver (every variant is then pinned)."""
    return os.environ.get("TRITON_INTERPRET", "0") in ("", "0")


def _candidates(tuner, configs, args, kwargs) -> list:
    """The configurations the autotuner's ``early_config_prune`` keeps for this call (all of
    them where it has none), in the autotuner's order."""
    prune = getattr(tuner, "early_config_prune", None)
    if not prune:
        return list(configs)
    return list(prune(configs, dict(zip(tuner.arg_names, args)), **kwargs)) or list(configs)


def _variant(tuner, named: dict, constexprs: frozenset) -> tuple:
    """What selects the call's compiled variant, as plain values: the autotuner's key values
    and the dtypes of its tensor arguments (its own tuning key), and the constexpr arguments."""
    own = {key: value for key, value in named.items() if key in tuner.arg_names}
    key = [own[name] for name in tuner.keys if name in own]
    key += [str(value.dtype) for value in own.values() if hasattr(value, "dtype")]
    fixed = sorted((name, value) for name, value in own.items() if name in constexprs)
    return tuple(key), tuple(fixed)


def _specialisation(named: dict) -> tuple:
    """What Triton specialises a compiled kernel on besides the constexprs, roughly: each tensor
    argument's 16-byte alignment and each integer's divisibility by 16 (a configuration's shared
    memory depends on them: an aligned load is pipelined, an unaligned one not)."""
    return tuple((name, value.data_ptr() % 16 == 0) if hasattr(value, "data_ptr")
                 else (name, value % 16 == 0, value == 1) if isinstance(value, int) and not isinstance(value, bool)
                 else (name,) for name, value in sorted(named.items(), key=lambda item: item[0]))


def _fn_chain(value):
    """``value`` and what it holds as ``.fn``, a few levels down (Triton's autotuner, heuristics
    and JITFunction each hold the next; FlagGems' ``LibEntry`` holds its autotuner)."""
    for _ in range(8):
        if value is None:
            return
        yield value
        value = getattr(value, "fn", None)


def _constexpr_names(tuner) -> frozenset:
    """The names of the kernel's ``tl.constexpr`` parameters: from the JITFunction under the
    autotuner (through Triton's heuristics), or from the annotations of the Python function
    under Triton's interpreter."""
    chain = list(_fn_chain(tuner.fn))
    if not chain:
        return frozenset()
    jit = next((inner for inner in chain if getattr(inner, "params", None) is not None), None)
    if jit is not None:
        return frozenset(p.name for p in jit.params if p.is_constexpr)
    try:
        parameters = inspect.signature(chain[-1]).parameters
    except (TypeError, ValueError):
        return frozenset()
    return frozenset(name for name, p in parameters.items() if "constexpr" in str(p.annotation))


def kernel_name(tuner) -> str:
    """The name of the kernel under the autotuner."""
    return getattr(list(_fn_chain(tuner))[-1], "__name__", type(tuner).__name__)


def _announce(kernel: str, digest: int | None, what: str) -> None:
    """Print a choice to stderr the first time this process makes it (``digest``: the variant's,
    None for a choice :data:`FORCED` makes for every variant)."""
    if (kernel, digest, what) in _ANNOUNCED:
        return
    _ANNOUNCED.add((kernel, digest, what))
    variant = "" if digest is None else f" (variant {digest:08x})"
    print(f"autotune pin: {kernel} runs {what}{variant}", file=sys.stderr)
