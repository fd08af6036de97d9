"""``flashcheck list``: the properties and the built-in implementations."""

from __future__ import annotations

from flashcheck.commands import EXIT_OK


def register(subparsers) -> None:
    parser = subparsers.add_parser("list", help="list properties and built-in implementations")
    parser.set_defaults(run=run)


def run(args, device) -> int:
    from flashcheck import adapters
    from flashcheck.properties import PROPERTIES

    print("properties:")
    for prop in PROPERTIES.values():
        needs = f" [needs {', '.join(sorted(prop.requires))}]" if prop.requires else ""
        where = f" [{', '.join(sorted(prop.devices))} only]" if prop.devices else ""
        print(f"  {prop.name}: {prop.summary}{needs}{where}")
    print("implementations: " + ", ".join(adapters.REGISTRY))
    return EXIT_OK
