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


def load(args):
    """The implementation ``args.impl`` names and the size profile ``args.profile`` chooses."""
    from flashcheck import adapters, profiles

    return adapters.resolve(args.impl), profiles.size_profile(args.profile)
