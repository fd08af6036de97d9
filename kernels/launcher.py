"""Kernel launches with Triton's per-call argument binding done once per specialisation.

``kernel[grid](...)`` binds every argument and recomputes Triton's specialisation of each
one (dtype and 16-byte alignment of pointers, value class of integers) on every call, then
looks the compiled kernel up; for the project's kernels, 20 to 60 arguments each, that is
40-110 µs of host time per launch on an H100 machine, against 8-15 µs for launching the
compiled kernel itself (docs/performance.md). At short sequence lengths a
forward+backward then waits on the host, not the GPU.

:func:`launch` keeps, per kernel, the compiled kernel of each *launch key* and launches it
directly. The key holds everything Triton's specialisation can depend on, and more: each
tensor's dtype and whether its address is 16-byte aligned (Triton's only pointer
specialisation), every scalar argument by type and exact value (Triton specialises
integers on their value), the constexpr values, the launch options, Triton's debug flag and
the current device. Two calls with equal keys therefore get the same compiled kernel from
Triton too; the first call of a key goes through ``kernel[grid]`` as usual and compiles.
In Triton's interpreter every call takes the usual path, without two kinds of work whose
results the interpreter discards (:func:`_language_patched_once_per_function`,
:func:`_without_discarded_overflow_checks`).
"""

from __future__ import annotations

import contextlib
import dataclasses

import torch
import triton

from flashcheck.kernels.config import INTERPRETER

#: Keys kept per kernel before the cache is emptied (fuzzing draws many shapes; each shape's
#: key costs one ordinary launch to re-learn).
CACHE_LIMIT = 1024

_COMPILED: dict = {}  # kernel -> {launch key -> (compiled kernel, constexpr names)}


def _constexpr_names(kernel) -> list[str]:
    """The kernel's constexpr parameters, which must all follow its runtime parameters."""
    flags = [param.is_constexpr for param in kernel.params]
    first = flags.index(True) if True in flags else len(flags)
    if not all(flags[first:]):
        raise ValueError(f"launch: {kernel.fn.__name__} must declare its constexpr parameters last")
    return [param.name for param in kernel.params[first:]]


def launch(kernel, grid: tuple, pointers: tuple, scalars: tuple, **constants):
    """``kernel[grid](*pointers, *scalars, **constants)``, launched through the compiled
    kernel cached for the call's launch key (module docstring).

    ``pointers``: the kernel's leading runtime parameters, each a tensor or None;
    ``scalars``: the runtime parameters after them, ints, floats or bools; ``constants``:
    every constexpr by name, plus launch options (``num_warps``, ``num_stages``). The key is
    built without a function call per argument: at tens of arguments per launch, that cost
    is what this module exists to remove."""
    if INTERPRETER:
        with _language_patched_once_per_function(), _without_discarded_overflow_checks():
            kernel[grid](*pointers, *scalars, **constants)
        return
    key = (
        torch.cuda.current_device(), triton.knobs.runtime.debug, tuple(constants.items()),
        tuple([None if p is None else (p.dtype, p.data_ptr() % 16 == 0) for p in pointers]),
        # The types too: True == 1 and 1.0 == 1 as dict keys, but Triton types them apart.
        scalars, tuple(map(type, scalars)),
    )
    compiled_by_key = _COMPILED.setdefault(kernel, {})
    entry = compiled_by_key.get(key)
    if entry is None:
        if not all(isinstance(s, (bool, int, float)) for s in scalars):
            raise TypeError(f"launch: scalars of {kernel.fn.__name__} must be ints, floats or bools, "
                            f"got {[type(s).__name__ for s in scalars]}")
        compiled = kernel[grid](*pointers, *scalars, **constants)
        if len(compiled_by_key) >= CACHE_LIMIT:
            compiled_by_key.clear()
        compiled_by_key[key] = (compiled, _constexpr_names(kernel))
        return
    compiled, names = entry
    grid = tuple(grid) + (1,) * (3 - len(grid))
    # The compiled kernel takes every parameter positionally, constexprs included.
    compiled[grid](*pointers, *scalars, *[constants[name] for name in names])


# -- Triton's interpreter ---------------------------------------------------------------------

try:  # Triton 3.x's interpreter; where it is laid out otherwise, launches go through it unchanged
    from triton.runtime import interpreter as _interpreter

    _PATCH_LANG = _interpreter._patch_lang
    _EMPTY_SCOPE = _interpreter._LangPatchScope
except (ImportError, AttributeError):  # pragma: no cover - depends on the Triton version
    _interpreter = _PATCH_LANG = _EMPTY_SCOPE = None
#: The builder whose options every interpreted operation reads (None: another Triton).
_BUILDER = getattr(_interpreter, "interpreter_builder", None)


@contextlib.contextmanager
def _language_patched_once_per_function():
    """Within the block (one interpreted launch), Triton's interpreter patches
    ``triton.language`` for each ``@triton.jit`` function once, not at every call.

    The interpreter runs a kernel by replacing the builtins of the language modules a
    function sees (``tl``, ``tl.core``) with interpreted ones; the launch undoes this when it
    ends. It also re-applies that patch at every call of a ``@triton.jit`` helper
    (``_load_rows``, ``_past_gap``, ``tl.zeros`` ...), thousands of calls per launch, each
    walking every member of the language modules with ``inspect.getmembers``, and nothing
    undoes those until the launch ends: the second call of a function finds the modules as
    its first call left them, and patching again changes nothing but the time taken, about
    a third of the interpreter's (Triton 3.6, CPU suite). So each function's first call in a
    launch patches as before and the later ones skip it; every operation of the kernel runs
    exactly as it did (``tests/test_launcher.py`` compares results bitwise). Nothing changes
    where Triton's interpreter lacks the internals this relies on."""
    if _PATCH_LANG is None or _interpreter._patch_lang is not _PATCH_LANG:
        yield  # another Triton, or already inside such a block
        return
    patched = set()

    def patch_lang(fn):
        if fn in patched:
            return _EMPTY_SCOPE()  # the language is already patched for fn: nothing to undo
        patched.add(fn)
        return _PATCH_LANG(fn)

    _interpreter._patch_lang = patch_lang
    try:
        yield
    finally:
        _interpreter._patch_lang = _PATCH_LANG


@contextlib.contextmanager
def _without_discarded_overflow_checks():
    """Within the block (one interpreted launch), Triton's interpreter does not compute the
    integer-overflow conditions that it then discards.

    With ``sanitize_overflow``, on by default in the interpreter's options, every integer
    add, sub and mul is also computed in int64 and compared with the type's range, and the
    condition goes to ``device_assert``, which returns without looking at it unless the
    options' ``debug`` is set; the interpreter's options never set it (Triton 3.6). Nothing
    is checked: an int32 overflow goes through unreported with or without the condition
    (``tests/test_launcher.py`` pins this), whose computation was half the time the
    interpreter spent on the kernels. Where ``debug`` is set the conditions are asserted, and
    they are left on."""
    options = getattr(_BUILDER, "options", None)
    if (not dataclasses.is_dataclass(options) or not getattr(options, "sanitize_overflow", False)
            or getattr(options, "debug", True)):
        yield  # another Triton, debug set, or nothing to skip
        return
    _BUILDER.options = dataclasses.replace(options, sanitize_overflow=False)
    try:
        yield
    finally:
        _BUILDER.options = options
