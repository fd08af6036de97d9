"""``flashcheck triage RESULT...``: which distinct failures of earlier ``flashcheck fuzz --json``
results the implementations' declarations explain now (:mod:`flashcheck.engine.triage`).

No kernel runs and no library is imported: the result is read, each failure's case is matched
against the known divergences the implementation (``--impl``, default: the one the result names)
declares as they stand, and each failure is printed with the declaration that explains it or
what keeps it a finding, its replay line under it. A declaration that depends on the GPU found at
run time reads as on the GPU ``--gpu-capability`` names, else the one the result's workers recorded,
else as on this machine (a note says so where that is no GPU); declines are not read (a case the
adapter now declines shows as not explained).

Several results (a survey's) are each read for the implementation they name, then counted
together. Exit 0 when every failure is explained (results without failures included), 1 when
some are not, 2, before anything is printed, for a result that cannot be read or an
implementation that cannot be loaded.
"""

from __future__ import annotations

import sys

from flashcheck.cli.commands import EXIT_FOUND, EXIT_OK, EXIT_USAGE
from flashcheck.cli.commands.common import load_implementation


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "triage", help="which failures of earlier fuzz results the implementation's declarations explain now")
    parser.add_argument("results", metavar="RESULT", nargs="+",
                        help="a file flashcheck fuzz --json wrote (.json or .json.gz); several: a survey's, each read "
                             "for the implementation it names")
    parser.add_argument("--impl", default=None,
                        help="built-in name or module:attr (default: the implementation each result names)")
    parser.add_argument("--gpu-capability", default=None, metavar="MAJOR.MINOR",
                        help="read GPU-dependent declarations as on a GPU of this compute capability (e.g. 9.0), "
                             "for a result that did not record its GPU (default: the one it recorded)")
    parser.set_defaults(run=run)


def run(args, device) -> int:
    from flashcheck.engine import triage

    try:  # every result read and every implementation loaded before anything is printed
        given = _capability(args.gpu_capability) if args.gpu_capability else None
        loaded = []
        for path in args.results:
            result = triage.load_result(path)
            name = args.impl or result.get("impl")
            if not isinstance(name, str) or not name:
                raise ValueError(f"--impl: {path!r} names no implementation; name one")
            loaded.append((path, name, _declaring(name), result))
    except ValueError as error:
        print(f"flashcheck triage: {error}", file=sys.stderr)
        return EXIT_USAGE
    left = total = 0
    for path, name, impl, result in loaded:
        if len(loaded) > 1:
            print(f"== {path}")
        found, unexplained = _report(name, impl, result, given)
        total, left = total + found, left + unexplained
    if len(loaded) > 1:
        print(f"{len(loaded)} results: {total - left} of {total} distinct failures explained; {left} not")
    return EXIT_FOUND if left else EXIT_OK


def _report(name: str, impl, result: dict, given) -> tuple[int, int]:
    """Print one result's failures, each as declared or not; return how many there are and how
    many no declaration explains."""
    from flashcheck.engine import triage

    capability = given if given is not None else triage.recorded_capability(result)
    if capability is not None:
        major, minor = capability
        whose = "the given" if given is not None else "the result's"
        print(f"GPU-dependent declarations read as on {whose} GPU (compute capability {major}.{minor})")
    triaged = triage.triage(impl, result["failures"], capability)
    for entry in triaged:
        failure = entry.failure
        print(f"{failure.get('count', 1)} × {failure.get('signature') or failure['kind']}")
        print(f"  declared: {entry.declared}" if entry.explained else f"  not explained: {entry.why_not}")
        if failure.get("replay"):
            print(f"  {failure['replay']}")
    left = sum(not entry.explained for entry in triaged)
    if left and capability is None and triage.device_dependent_reading(result):
        print("note: the result comes from a GPU it did not record and this machine has none: a declaration that "
              "depends on the GPU found at run time (FlashAttention-4's Hopper backward, say) explains nothing here; "
              "name that GPU with --gpu-capability, and replay what is left with flashcheck check on one (a case "
              "the adapter now declines shows here as not explained, too)")
    print(f"{name}: {len(triaged) - left} of {len(triaged)} distinct failures explained by its declarations; "
          f"{left} not")
    return len(triaged), left


def _capability(text: str) -> tuple[int, int]:
    """``--gpu-capability``'s value: ValueError, one line naming it, unless it is MAJOR.MINOR."""
    major, dot, minor = text.partition(".")
    if not (dot and major.isdigit() and minor.isdigit()):
        raise ValueError(f"--gpu-capability: expected MAJOR.MINOR (e.g. 9.0), got {text!r}")
    return int(major), int(minor)


def _declaring(name: str):
    """The implementation whose declarations are read: a built-in adapter whether or not its
    library is installed here (nothing runs), any other as every command loads it."""
    from flashcheck import peers, protocol

    if name not in peers.PEERS:
        return load_implementation(name)
    adapter = peers.describe(name)
    try:
        protocol.check_declaration(adapter)
    except ValueError as error:
        raise ValueError(f"--impl {name}: {error}") from None
    return adapter
