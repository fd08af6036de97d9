"""Arguments and loading shared by the subcommands."""

from __future__ import annotations


def add_impl_arguments(parser) -> None:
    """``--impl``, ``--device`` and ``--profile``, as every command that runs a kernel takes them."""
    parser.add_argument("--impl", default="flash", help="built-in name or module:attr (default: flash)")
    add_device_argument(parser)
    parser.add_argument(
        "--profile", default=None, choices=("interpreter", "gpu"),
        help="size profile (default: gpu on CUDA, interpreter on the CPU)",
    )


def add_device_argument(parser) -> None:
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))


def add_jobs_argument(parser) -> None:
    """``--jobs``: worker processes for a corpus run (see :mod:`flashcheck.corpus_jobs`)."""
    parser.add_argument("--jobs", type=_positive_int, default=None, metavar="N",
                        help="cases measured at a time, each in a worker process (default: one per CPU core, "
                             "at most 8, on a GPU; 1 on the CPU)")


def jobs_for(args, device) -> int:
    """``--jobs``, or :func:`flashcheck.corpus_jobs.default_jobs` for ``device``."""
    from flashcheck import corpus_jobs

    return args.jobs if args.jobs is not None else corpus_jobs.default_jobs(device)


def _positive_int(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def load(args):
    """The implementation ``args.impl`` names and the size profile ``args.profile`` chooses.

    ValueError, one line naming ``--impl`` and the module or the feature, when the
    implementation cannot be loaded (any exception at the module's import) or declares a
    feature the protocol does not have."""
    from flashcheck import adapters, profiles, protocol

    impl = adapters.resolve(args.impl)
    try:
        protocol.check_declaration(impl)
    except ValueError as error:
        raise ValueError(f"--impl {args.impl}: {error}") from None
    return impl, profiles.size_profile(args.profile)
