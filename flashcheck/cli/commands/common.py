"""Arguments and loading shared by the subcommands."""

from __future__ import annotations

# Output paths are checked the same way by the commands and the pytest plugin.
from flashcheck.engine.output_paths import check_writable_file, check_writable_folder  # noqa: F401


def add_impl_argument(parser) -> None:
    """``--impl``: the implementation, which :func:`load_implementation` loads and checks."""
    parser.add_argument("--impl", default="flash", help="built-in name or module:attr (default: flash)")


def add_impl_arguments(parser) -> None:
    """``--impl``, ``--device`` and ``--size``, as the commands that draw cases take them."""
    add_impl_argument(parser)
    add_device_argument(parser)
    # --profile: the option's earlier name, still accepted.
    parser.add_argument(
        "--size", "--profile", dest="size", default=None, choices=("interpreter", "gpu"),
        help="sizes of the drawn cases (default: gpu on CUDA, interpreter on the CPU)",
    )


def add_device_argument(parser) -> None:
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))


def add_jobs_argument(parser) -> None:
    """``--jobs``: worker processes for a corpus run (see :mod:`flashcheck.regress.corpus_workers`)."""
    parser.add_argument("--jobs", type=_positive_int, default=None, metavar="N",
                        help="cases measured at a time, each in a worker process (default: one per CPU core, "
                             "at most 8, on a GPU; 1 on the CPU)")


def jobs_for(args, device) -> int:
    """``--jobs``, or :func:`flashcheck.regress.corpus_workers.default_jobs` for ``device``."""
    from flashcheck.regress import corpus_workers

    return args.jobs if args.jobs is not None else corpus_workers.default_jobs(device)


def _positive_int(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def load_implementation(spec: str):
    """The implementation that ``--impl spec`` names, checked as every command that takes
    ``--impl`` checks it before any work: ValueError, one line naming ``--impl`` and the
    module or the feature, when it cannot be loaded (an unknown name, any exception at the
    module's import, a library missing) or declares a feature, a device kind or a property
    that does not exist; one naming ``FLASHCHECK_AUTOTUNE_CONFIG`` where that is malformed
    (:func:`flashcheck.autotune_pin.forced_entries`)."""
    from flashcheck import autotune_pin, peers, protocol
    from flashcheck.engine import interruption

    try:
        impl = peers.resolve(spec)
    except (ValueError, ImportError) as error:
        interruption.check()  # an import that a Ctrl-C cut short, not a module that cannot be imported
        raise ValueError(f"--impl: {error}") from None
    interruption.check()  # a Ctrl-C that the implementation's imports caught and dropped
    try:
        protocol.check_declaration(impl)
    except ValueError as error:
        raise ValueError(f"--impl {spec}: {error}") from None
    autotune_pin.forced_entries()  # a malformed override: one line naming it, before any work
    return impl


def add_one_case_arguments(parser) -> None:
    """``--property`` and ``--case``: one property on one case, as a failure report names them."""
    parser.add_argument("--property", required=True, help="property name (see 'flashcheck list')")
    parser.add_argument("--case", required=True, help="case spec, as printed in failure reports")


def load_one_case(args):
    """The implementation, the property and the case that ``--impl``, ``--property`` and
    ``--case`` name: ValueError, one line naming the option, for an unknown property or a case
    spec that does not parse."""
    from flashcheck.cases.case import Case
    from flashcheck.properties import PROPERTIES

    impl, _ = load(args)
    if args.property not in PROPERTIES:
        raise ValueError(f"--property: unknown {args.property!r}; known: {sorted(PROPERTIES)}")
    try:
        case = Case.from_spec(args.case)
    except (ValueError, TypeError) as error:
        raise ValueError(f"--case: {error}") from None
    return impl, PROPERTIES[args.property], case


def load(args):
    """The implementation ``args.impl`` names (:func:`load_implementation`) and the case sizes
    ``args.size`` chooses."""
    from flashcheck.cases import sizes as case_sizes

    return load_implementation(args.impl), case_sizes.choose(args.size)


def prepare(args, impl) -> None:
    """:func:`flashcheck.protocol.prepare` for the implementation ``args.impl`` names: its
    library imported, or ValueError, one line naming ``--impl``. Where the cases run: in the
    process that runs them, since importing a GPU library may start a CUDA context."""
    from flashcheck import protocol

    try:
        protocol.prepare(impl)
    except ValueError as error:
        raise ValueError(f"--impl {args.impl}: {error}") from None


def fuzz_in_workers(options, **kwargs):
    """:func:`flashcheck.engine.fuzz_workers.fuzz` of ``options``: ``(result, None)``, or, where
    a worker could not be set up (the implementation's module, its library), ``(None, 2)``
    after one line on stderr. A run that flashcheck's own code ended comes back as a result,
    with what it found and ``result.flashcheck_error`` (see :func:`say_flashcheck_error`)."""
    import sys

    from flashcheck.cli.commands import EXIT_USAGE
    from flashcheck.engine import fuzz_workers

    try:
        return fuzz_workers.fuzz(options, **kwargs), None
    except fuzz_workers.WorkerError as error:
        print(f"flashcheck: {error}", file=sys.stderr)
        return None, EXIT_USAGE


def say_flashcheck_error(result) -> bool:
    """Print the error of flashcheck's own code that ended a worker run, with its case and
    traceback, on stderr; False when there was none. The command then exits 4."""
    import sys

    if result.flashcheck_error is None:
        return False
    print(f"flashcheck: {result.flashcheck_error}", file=sys.stderr)
    return True
