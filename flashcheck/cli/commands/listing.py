"""``flashcheck list``: the properties and the built-in implementations."""

from __future__ import annotations

from flashcheck.cli.commands import EXIT_OK


def register(subparsers) -> None:
    parser = subparsers.add_parser("list", help="list properties and built-in implementations")
    parser.set_defaults(run=run)


def run(args, device) -> int:
    from flashcheck import peers
    from flashcheck.properties import PROPERTIES

    print("properties:")
    for prop in PROPERTIES.values():
        needs = f" [needs {', '.join(sorted(prop.requires))}]" if prop.requires else ""
        where = f" [{', '.join(sorted(prop.devices))} only]" if prop.devices else ""
        print(f"  {prop.name}: {prop.summary}{needs}{where}")
    print("implementations:")
    for name in peers.REGISTRY:
        print(f"  {implementation_line(name)}")
    return EXIT_OK


def implementation_line(name: str) -> str:
    """One line of ``flashcheck list`` for the built-in implementation ``name``: for another
    library's adapter (flashcheck.peers), the library's version or "not installed" and the
    pip command; then the features per device kind, and the properties it declares not
    applicable (``flashcheck_not_applicable``). Imports no peer library."""
    from flashcheck import peers

    if name in peers.PEERS:
        impl = peers.describe(name)
        library = impl.library
        version = library.version()
        where = f"{library.distributions[0]} {version}" if version else f"{library.distributions[0]} not installed: " \
                                                                          f"{library.install}"
        return f"{name} ({where}): {_features(impl)}"
    try:
        impl = peers.REGISTRY[name]()
    except (ImportError, ValueError) as error:  # e.g. triton missing for "flash"
        return f"{name} (cannot load: {error})"
    return f"{name}: {_features(impl)}"


def _features(impl) -> str:
    from flashcheck.protocol import features_of, not_applicable

    by_device = getattr(impl, "flashcheck_features_by_device", None)
    if by_device is None:
        line = f"any device: {', '.join(sorted(features_of(impl)))}"
    else:
        line = "; ".join(f"{kind}: {', '.join(sorted(features))}" for kind, features in by_device.items())
    declared = not_applicable(impl)
    return line + (f"; declared not applicable: {', '.join(sorted(declared))}" if declared else "")
