"""How many kernel compilations do a property's drawn cases need?

``TRITON_INTERPRET=1 python -m flashcheck.devtools.specialisations PROPERTY ... [--examples N]
[--size gpu] [--unspecialised ARG ...]``

On a GPU, a run of the property suite spends nearly all its time compiling, not running:
each launch whose *specialisation* is new compiles the kernel again (seconds each; a
float32 head-dim-256 forward and backward, 11 s on an H100 host). The specialisation is the launch's constexprs
and launch options plus Triton's own classification of every runtime argument: a
pointer's dtype and 16-byte alignment, an integer's width and whether it equals 1 or is
divisible by 16. Triton's cache keeps each compilation, so on a fresh machine the count
of distinct specialisations is the count of compilations.

This tool draws cases for each property as the suite does (:func:`flashcheck.engine.property_cases.case_strategy`,
derandomized, the GPU's feature set), makes the project kernel's call for each one --
forward, and backward where the property requires it -- with every launch *recorded
instead of run*, and counts the distinct specialisations per kernel, classified by
Triton's own function. ``--unspecialised`` counts them again as if those runtime
arguments were marked ``do_not_specialize``: what such a change would save.

Runs on the CPU in Triton's interpreter mode (no kernel runs, so GPU sizes cost nothing).
What it counts is a floor: the launch settings there are the interpreter's, so launch
settings that differ between tuned GPU configurations by band alone are not told apart,
and properties that call the kernel again on transformed inputs (other layouts, repeated
keys) make launches that this count does not include.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import inspect
import sys

from hypothesis import HealthCheck, Phase, given, settings
from triton._C.libtriton import native_specialize_impl
from triton.backends.compiler import BaseBackend

from flashcheck import protocol
from flashcheck.cases import sizes as case_sizes
from flashcheck.engine import property_cases
from flashcheck.kernels import config, interface, launcher
from flashcheck.oracle.backward_pass import gradients
from flashcheck.properties import PROPERTIES

#: The runtime arguments that are lengths or head counts, not strides: the default of
#: ``--unspecialised``. ``head_dim`` is not among them: unspecialised, it turns the kernels'
#: vector loads into scalar ones (``python -m flashcheck.devtools.codegen``).
LENGTH_ARGUMENTS = ("seqlen_q", "seqlen_k", "window_left", "window_right", "heads", "kv_heads", "group")


@dataclasses.dataclass(frozen=True)
class Launch:
    """One launch of a project kernel, as :func:`flashcheck.kernels.launcher.launch` got it."""
    kernel: object
    pointers: tuple
    scalars: tuple
    constants: dict

    def runtime_arguments(self, unspecialised=()) -> list[tuple]:
        """``(name, value, kind, attribute)`` of each runtime argument, classified by Triton's
        own specialisation function: ``kind`` a type (``"*fp16"``, ``"i32"``) or
        ``"constexpr"`` (an integer equal to 1, a None pointer), ``attribute`` ``"D"`` where
        16-divisible or aligned. Names in ``unspecialised``, and those the kernel declares
        with ``do_not_specialize``, are classified by type alone."""
        names = list(inspect.signature(self.kernel.fn).parameters)
        # A compiled kernel keeps the declaration as an attribute; the interpreter's, with its kwargs.
        declared = getattr(self.kernel, "do_not_specialize", None) or getattr(self.kernel, "kwargs", {}).get("do_not_specialize")
        unspecialised = {*unspecialised, *(names[n] if isinstance(n, int) else n for n in declared or ())}
        return [(name, value, *native_specialize_impl(BaseBackend, value, False, name not in unspecialised, True)[:2])
                for name, value in zip(names, (*self.pointers, *self.scalars))]

    def variant(self) -> tuple:
        """The launch's code variant (:func:`variants`): its constexprs but the launch
        settings, and the element type of each pointer argument, as sorted pairs."""
        names = list(inspect.signature(self.kernel.fn).parameters)
        launch_settings = {"BLOCK_M", "BLOCK_N", "num_warps", "num_stages"}
        types = [(name, "none" if p is None else str(p.dtype).removeprefix("torch."))
                 for name, p in zip(names, self.pointers)]
        return tuple(sorted([*((n, v) for n, v in self.constants.items() if n not in launch_settings), *types]))

    def key(self, unspecialised=()) -> tuple:
        """The launch's compilation key: constexprs and launch options, then each runtime
        argument's specialisation."""
        return (tuple(sorted(self.constants.items())),
                tuple((kind, attribute) for _, _, kind, attribute in self.runtime_arguments(unspecialised)))


@contextlib.contextmanager
def recorded_launches():
    """Within the block the project kernel's launches are recorded, not run: yields a list
    that fills with :class:`Launch` records."""
    log = []

    def record(kernel, grid, pointers, scalars, **constants):
        log.append(Launch(kernel, tuple(pointers), tuple(scalars), constants))

    real, launcher.launch = launcher.launch, record
    try:
        yield log
    finally:
        launcher.launch = real


@contextlib.contextmanager
def _without_local_constants():
    """Within the block hypothesis finds no constants in the project's own source.

    Now and then (one choice in twenty) hypothesis draws a constant that it found in the
    source of the modules imported so far, outside the standard library and site-packages:
    a derandomized test then draws other cases once one more module has been imported (in
    a pytest run, any earlier test's or test module's). Counted without those constants,
    the same strategies draw the same cases wherever the count is taken. Hypothesis's
    private API (6.170): where it differs, the block changes nothing."""
    try:
        from hypothesis.internal.cache import LRUCache
        from hypothesis.internal.conjecture import providers

        empty = providers.SortedSet
        none = providers.Constants(integers=empty(), floats=empty(key=providers.float_to_int), bytes=empty(),
                                   strings=empty())
        saved = providers._get_local_constants, providers.CONSTANTS_CACHE
    except (ImportError, AttributeError, TypeError):
        yield
        return
    providers._get_local_constants, providers.CONSTANTS_CACHE = (lambda: none), LRUCache(1024)
    try:
        yield
    finally:
        providers._get_local_constants, providers.CONSTANTS_CACHE = saved


def launches(property_name: str, *, examples: int = 200, size: str = "gpu") -> list[Launch]:
    """The project kernel's launches, recorded, for ``examples`` cases drawn for
    ``property_name`` at ``size`` (case sizes or their name), derandomized: the same cases
    on every call while the strategies stay as they are, whatever was imported before
    (:func:`_without_local_constants`)."""
    if not config.INTERPRETER:
        raise ValueError("TRITON_INTERPRET: expected 1, set before triton is imported (the cases are CPU tensors)")
    if property_name not in PROPERTIES:
        raise ValueError(f"property: unknown {property_name!r}; known: {sorted(PROPERTIES)}")
    prop = PROPERTIES[property_name]
    impl = interface.flash_attention
    strategy = property_cases.cases_for(prop, impl, "cuda", case_sizes.choose(size))
    backward = prop.exercises("backward")  # the project kernel has a backward: "uses" runs it too

    with recorded_launches() as log, _without_local_constants():
        @settings(max_examples=examples, derandomize=True, database=None, phases=[Phase.generate],
                  deadline=None, suppress_health_check=list(HealthCheck))
        @given(case=strategy)
        def call(case):
            inputs = case.materialize("cpu")
            if backward:
                gradients(impl, case, inputs)
            else:
                protocol.call(impl, inputs, case)

        call()
    return log


def count(property_name: str, *, examples: int = 200, size: str = "gpu", unspecialised=LENGTH_ARGUMENTS) -> dict:
    """``{kernel name: (launches, specialisations, specialisations with unspecialised)}`` for
    ``examples`` cases drawn for ``property_name`` at ``size`` (the name of case sizes)."""
    tally = collections.defaultdict(lambda: [0, set(), set()])
    for launch in launches(property_name, examples=examples, size=size):
        tally[launch.kernel.fn.__name__][0] += 1
        tally[launch.kernel.fn.__name__][1].add(launch.key())
        tally[launch.kernel.fn.__name__][2].add(launch.key(unspecialised))
    return {name: (launches, len(keys), len(reduced)) for name, (launches, keys, reduced) in sorted(tally.items())}


def variants(property_name: str, *, examples: int = 200, size: str = "gpu") -> dict[str, set[tuple]]:
    """``{kernel name: set of variants}`` that ``examples`` cases drawn for ``property_name``
    reach: a variant is what decides the kernel's code apart from Triton's classification
    of runtime integers and pointer alignment, as sorted ``(name, value)`` pairs: every
    constexpr but the launch settings (which the interpreter fixes), and the element type
    of each tensor argument (``"none"`` for an absent one)."""
    reached = collections.defaultdict(set)
    for launch in launches(property_name, examples=examples, size=size):
        reached[launch.kernel.fn.__name__].add(launch.variant())
    return dict(sorted(reached.items()))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flashcheck.devtools.specialisations", description=__doc__.split("\n\n")[0])
    parser.add_argument("properties", nargs="+", metavar="PROPERTY")
    parser.add_argument("--examples", type=int, default=200, help="cases drawn per property (default 200, as the gpu hypothesis profile draws)")
    parser.add_argument("--size", default="gpu", help="sizes of the drawn cases (default gpu)")
    parser.add_argument("--unspecialised", nargs="*", default=list(LENGTH_ARGUMENTS), metavar="ARG",
                        help="runtime arguments to count again as unspecialised (default: the lengths and counts)")
    args = parser.parse_args(argv)
    try:
        for name in args.properties:
            counts = count(name, examples=args.examples, size=args.size, unspecialised=tuple(args.unspecialised))
            print(f"{name} ({args.examples} cases, size {args.size}): "
                  f"{sum(c[1] for c in counts.values())} specialisations, "
                  f"{sum(c[2] for c in counts.values())} without specialising {' '.join(args.unspecialised) or '-'}")
            for kernel, (launches, keys, reduced) in counts.items():
                print(f"  {kernel}: {launches} launches, {keys} specialisations, {reduced} without")
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
