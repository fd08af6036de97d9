"""Fuzz workers that meet one Triton autotuner together split its configurations between them.

A Triton autotuner (``triton.autotune``, and libraries' subclasses of its ``Autotuner``, such as
FlagGems' ``LibTuner``) compiles and times every one of its configurations the first time it
meets a tuning key. Fuzz workers that start in one compile class together (an implementation
declaring ``flashcheck_autotuned``: :func:`flashcheck.engine.focus.start_class`) would each
compile every configuration, in the same order, side by side: the same minutes of work once per
worker (FlagGems' SDPA: 36 forward and 18 backward configurations per Triton specialisation).

:func:`split_configurations` has each worker compile a tuning round's configurations first, in
an order of its own that starts at its share of the list (:func:`rotation`), before the
autotuner times them in its own order: a configuration a teammate compiled meanwhile comes from
Triton's on-disk cache in milliseconds, so that a team of n workers compiles each configuration
about once, n at a time. What is timed, what is chosen, and the tuning results kept on disk
(Triton's are keyed on the configurations in their order; FlagGems' per configuration) are
unchanged. A configuration that does not compile is left to the autotuner, which meets the
same error when it times it and handles it as it always does.
"""

from __future__ import annotations

import functools

#: Where a tuning round's configurations wait, on the autotuner, for the round's first timing.
_UNCOMPILED = "_flashcheck_uncompiled"
#: Set on Triton's ``Autotuner`` once :func:`split_configurations` has wrapped it.
_SPLIT = "_flashcheck_split"


def rotation(configs: list, position: int, team: int) -> list:
    """``configs`` starting at the share of worker ``position`` (0-based) of a ``team`` of
    workers: the first ``len(configs) * position // team`` moved to the end. ValueError for a
    position outside the team."""
    if not isinstance(team, int) or team < 1:
        raise ValueError(f"team: expected a positive int, got {team!r}")
    if not isinstance(position, int) or not 0 <= position < team:
        raise ValueError(f"position: expected an int in [0, {team}), got {position!r}")
    start = len(configs) * position // team
    return list(configs[start:]) + list(configs[:start])


def split_configurations(position: int, team: int) -> bool:
    """From now on in this process, every Triton autotuner compiles a tuning round's
    configurations in :func:`rotation`'s order before it times the first of them (module
    docstring). Call it before :func:`flashcheck.engine.compile_clock.watch`, so that the
    compile clock, wrapping the autotuner's timing from outside, counts these compilations as
    compiling. Returns False, changing nothing, where Triton's autotuner is not there; calling it
    again changes nothing more."""
    rotation([], position, team)  # the position and team checked before anything changes
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return False
    if getattr(Autotuner, _SPLIT, False):
        return True
    prune_configs, bench = Autotuner.prune_configs, Autotuner._bench

    @functools.wraps(prune_configs)
    def pruned(self, *args, **kwargs):
        configs = prune_configs(self, *args, **kwargs)
        # Both Triton's autotuner and FlagGems' prune before a tuning round and time what is left.
        setattr(self, _UNCOMPILED, list(configs))
        return configs

    @functools.wraps(bench)
    def timed(self, *args, config, **meta):
        uncompiled = self.__dict__.pop(_UNCOMPILED, None)
        if uncompiled and len(uncompiled) > 1:
            _compile(self, rotation(uncompiled, position, team), args, meta)
        return bench(self, *args, config=config, **meta)

    Autotuner.prune_configs, Autotuner._bench = pruned, timed
    setattr(Autotuner, _SPLIT, True)
    return True


def _compile(autotuner, configs: list, args: tuple, meta: dict) -> None:
    """Compile each of ``configs`` for the launch the autotuner is timing, without running it."""
    for config in configs:
        try:
            autotuner.fn.run(*args, **{**meta, **config.all_kwargs(), "warmup": True})
        except Exception:  # noqa: BLE001 - the autotuner meets it again when it times the config
            continue
