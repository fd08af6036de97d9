"""The import layers: the kernel (``kernels/``, installed as ``flashcheck.kernels``) sits
below the verifier. Its modules import only each other, torch, triton and the standard
library, never the rest of flashcheck; tools that drive the kernel with the verifier's
machinery live in :mod:`flashcheck.devtools`.

The verifier is layered too: its core imports nothing above it. The core is the cases and
how they are drawn (:mod:`flashcheck.cases`), what is expected of an implementation and how
its outputs are judged (:mod:`flashcheck.oracle`: the reference, the tolerance model, the
comparisons), and the top-level :mod:`flashcheck.protocol`, :mod:`flashcheck.divergences` and
:mod:`flashcheck.autotune_pin`;
inside it the oracle builds on the cases, and the protocol and the known divergences on both,
but the oracle's backward pass calls through the protocol and the strategies draw the
protocol's features, so its modules are one layer, held to importing one another without a
loop (:func:`import_cycle`). The properties build on the core; the implementations
(:mod:`flashcheck.peers`) on the core and, by name, the kernel; the engine
(:mod:`flashcheck.engine`: verdicts, fuzzing, worker processes, Ctrl-C and output paths) on
those; the regression measurements, mutation testing, the benchmarks and the pytest entry points on the
engine; the command line on everything but the developers' tools (:data:`MAY_IMPORT`; the
few imports against that order, each made at call time, are named with their reasons in
:data:`ALLOWED_UPWARD`).

Checked on the source with :mod:`ast`, so that an import inside a function, which runs
only when that function is called, counts as much as one at the top of a module.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parents[1] / "kernels"
KERNEL_PACKAGE = "flashcheck.kernels"
#: Third-party distributions the kernel may import, besides the standard library.
KERNEL_DEPENDENCIES = frozenset({"torch", "triton"})


def imported_modules(source: str, package: str,
                     packages: frozenset[str] = frozenset({"flashcheck"})) -> list[tuple[int, str]]:
    """``(line, absolute module name)`` of every import in ``source``, the source of a module
    of ``package``: ``import`` and ``from ... import`` statements anywhere in the module
    (relative ones resolved against ``package``), and ``importlib.import_module`` or
    ``__import__`` calls with a literal name. ``from P import x``, for P ``flashcheck`` or
    another of ``packages``, yields ``P.x``, the module it reaches into."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            if module in packages or not node.module:
                found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, module))
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and (getattr(node.func, "id", None) == "__import__"
                   or getattr(node.func, "attr", None) == "import_module")):
            found.append((node.lineno, node.args[0].value))
    return found


def layer_violations(source: str, package: str) -> list[str]:
    """``"line N: module"`` for each import in ``source`` (a module of ``package``) that the
    kernel may not make: anything of flashcheck outside ``flashcheck.kernels``, and any
    third-party module but torch and triton."""
    violations = []
    for line, module in imported_modules(source, package):
        top = module.split(".")[0]
        if top == "flashcheck":
            allowed = module == KERNEL_PACKAGE or module.startswith(KERNEL_PACKAGE + ".")
        else:
            allowed = top in KERNEL_DEPENDENCIES or top in sys.stdlib_module_names
        if not allowed:
            violations.append(f"line {line}: {module}")
    return violations


def _package_of(path: Path) -> str:
    """The package a module file of ``kernels/`` belongs to (its own name for an ``__init__``)."""
    parts = path.relative_to(KERNELS).with_suffix("").parts
    return ".".join((KERNEL_PACKAGE, *parts[:-1]))


KERNEL_MODULES = sorted(KERNELS.rglob("*.py"))


def test_the_kernel_modules_are_found():
    names = {path.name for path in KERNEL_MODULES}
    assert {"__init__.py", "forward.py", "backward.py", "interface.py", "launcher.py"} <= names


@pytest.mark.parametrize("path", KERNEL_MODULES, ids=lambda path: str(path.relative_to(KERNELS)))
def test_a_kernel_module_imports_only_the_kernel_torch_triton_and_the_standard_library(path):
    violations = layer_violations(path.read_text(), _package_of(path))
    assert not violations, (
        f"kernels/{path.relative_to(KERNELS)} imports above the kernel's layer: {', '.join(violations)} "
        "(tools that need the verifier belong in flashcheck/devtools/)")


# -- the checker itself ---------------------------------------------------------------------------


@pytest.mark.parametrize("statement", [
    "from flashcheck import bench",
    "import flashcheck.engine.fuzz",
    "from flashcheck.properties import PROPERTIES",
    "from flashcheck.properties.gradients import gradients",
    "from flashcheck import kernels, fuzz",
    "from .. import protocol",
    "from ..devtools import tune",
    "import numpy",
    "import hypothesis.strategies as st",
    "def later():\n    from flashcheck import bench",
    "importlib.import_module('flashcheck.bench')",
])
def test_the_checker_flags_an_import_above_the_kernel(statement):
    assert layer_violations(statement, KERNEL_PACKAGE)


@pytest.mark.parametrize("statement", [
    "from __future__ import annotations",
    "import os, importlib.util",
    "from dataclasses import dataclass",
    "import torch",
    "import triton.language as tl",
    "from triton.backends.compiler import GPUTarget",
    "from flashcheck.kernels import config, launcher",
    "from flashcheck.kernels.forward import _attention_forward",
    "from flashcheck import kernels",
    "import flashcheck.kernels.interface",
    "from . import config",
    "from .config import padded_head_dim",
])
def test_the_checker_allows_the_kernel_torch_triton_and_the_standard_library(statement):
    assert layer_violations(statement, KERNEL_PACKAGE) == []


# -- the verifier's layers ------------------------------------------------------------------------

REPOSITORY = Path(__file__).resolve().parents[1]
VERIFIER = REPOSITORY / "flashcheck"
PROPERTIES = REPOSITORY / "properties"

#: flashcheck's subpackages that belong to its core: the cases and how they are drawn, and
#: the oracle (the reference, the tolerance model and comparisons).
CORE_PACKAGES = frozenset({"cases", "oracle"})
#: flashcheck's top-level modules that belong to its core: the protocol, the known divergences
#: and the pinning of Triton autotuners the protocol declares. Everything else builds on the core.
CORE_MODULES = frozenset({"protocol", "divergences", "autotune_pin"})
#: The pytest plugin and the property suite it runs: entry points, above the engine.
PYTEST_MODULES = frozenset({"pytest_plugin", "property_suite"})
#: The layers each layer may import besides its own modules. The core imports nothing above
#: it; the properties see only the core; an implementation (peers) knows the core and, by
#: name, the project kernel; nothing imports the command line, the pytest entry points or
#: the developers' tools.
MAY_IMPORT = {
    "core": frozenset(),
    "properties": frozenset({"core"}),
    "peers": frozenset({"core", "kernels"}),
    "engine": frozenset({"core", "properties", "peers"}),
    "regress": frozenset({"core", "properties", "peers", "engine"}),
    "mutation": frozenset({"core", "properties", "peers", "engine"}),
    "bench": frozenset({"core", "peers"}),
    "repro": frozenset({"core", "properties", "peers", "engine"}),
    "pytest": frozenset({"core", "properties", "peers", "engine", "repro"}),
    "cli": frozenset({"core", "properties", "peers", "engine", "regress", "mutation", "bench", "repro"}),
    "devtools": frozenset({"core", "properties", "peers", "engine", "bench", "kernels"}),
}

#: Imports across the layers that are known and wanted, each with its reason: (importing
#: module, imported module) -> why. Each is made inside a function, at call time.
ALLOWED_UPWARD = {
    ("flashcheck.protocol", "flashcheck.properties"):
        "flashcheck_not_applicable names properties: protocol.not_applicable checks them against the registry",
    ("flashcheck.peers.common", "flashcheck.properties"):
        "a divergence declared on every property (Peer's every_property) is spread over the registry's names",
    ("flashcheck.peers.sdpa_public", "flashcheck.properties.masking"):
        "cuDNN's leak is declared on the inputs future_keys_cannot_change_output runs (its fresh keys behind the "
        "mask), which that property alone makes",
    ("flashcheck.properties.memory", "flashcheck.repro.standalone"):
        "the output guard bands and the memory growth rule are written once, in the plain-torch module every "
        "script carries (it imports nothing of flashcheck), so that the property and its script decide alike",
}


def layer_of(module: str) -> str | None:
    """The layer of ``module`` (an absolute name under flashcheck), None outside flashcheck
    or for a module that belongs to no layer."""
    parts = module.split(".")
    if parts[0] != "flashcheck":
        return None
    if len(parts) == 1 or parts[1] in CORE_PACKAGES or parts[1] in CORE_MODULES:
        return "core"
    if parts[1] in PYTEST_MODULES:
        return "pytest"
    return parts[1] if parts[1] in MAY_IMPORT or parts[1] == "kernels" else None


def verifier_violations(source: str, package: str, layer: str, importer: str = "") -> list[str]:
    """``"line N: module (layer)"`` for each import in ``source`` (module ``importer`` of
    ``package``, in ``layer``) of a flashcheck module its layer may not import, or that
    belongs to no layer, unless :data:`ALLOWED_UPWARD` names it."""
    violations = []
    for line, module in imported_modules(source, package):
        if module.split(".")[0] != "flashcheck" or (importer, module) in ALLOWED_UPWARD:
            continue
        target = layer_of(module)
        if target != layer and target not in MAY_IMPORT[layer]:
            violations.append(f"line {line}: {module} ({target or 'no layer'})")
    return violations


def _verifier_module(path: Path) -> tuple[str, str]:
    """``(module, package)`` of a file of ``flashcheck/`` or ``properties/``."""
    if path.is_relative_to(PROPERTIES):
        parts = ("properties", *path.relative_to(PROPERTIES).with_suffix("").parts)
    else:
        parts = path.relative_to(VERIFIER).with_suffix("").parts
    parts = ("flashcheck", *parts)
    package = ".".join(parts[:-1])
    return (package if parts[-1] == "__init__" else ".".join(parts)), package


VERIFIER_MODULES = sorted(VERIFIER.rglob("*.py")) + sorted(PROPERTIES.rglob("*.py"))


def test_the_modules_of_the_verifier_are_found():
    modules = {_verifier_module(path)[0] for path in VERIFIER_MODULES}
    assert {"flashcheck", "flashcheck.cases.case", "flashcheck.engine.verdict", "flashcheck.peers",
            "flashcheck.properties.gradients", "flashcheck.cli.commands.fuzz"} <= modules


@pytest.mark.parametrize("path", VERIFIER_MODULES, ids=lambda path: str(path.relative_to(REPOSITORY)))
def test_a_module_of_the_verifier_imports_only_its_own_layer_and_those_below(path):
    module, package = _verifier_module(path)
    layer = layer_of(module)
    assert layer is not None, f"{module} belongs to no layer: put it in a subpackage, or add it to CORE_MODULES"
    violations = verifier_violations(path.read_text(), package, layer, module)
    assert not violations, f"{module} ({layer}) imports above its layer: {', '.join(violations)}"


@pytest.mark.parametrize("statement, package, layer", [
    ("from flashcheck.engine import fuzz", "flashcheck", "core"),
    ("from flashcheck.properties.gradients import grads_match_reference", "flashcheck", "core"),
    ("def later():\n    from flashcheck.cli import main", "flashcheck.engine", "engine"),
    ("from flashcheck import peers", "flashcheck.properties", "properties"),
    ("from flashcheck.regress import corpus", "flashcheck.engine", "engine"),
    ("from flashcheck import property_suite", "flashcheck.regress", "regress"),
    ("from flashcheck.devtools import tune", "flashcheck.bench", "bench"),
    ("from flashcheck import profiles", "flashcheck", "core"),
])
def test_the_checker_flags_an_import_above_the_layer(statement, package, layer):
    assert verifier_violations(statement, package, layer)


@pytest.mark.parametrize("statement, package, layer", [
    ("from flashcheck import protocol\nfrom flashcheck.oracle import compare", "flashcheck.cases", "core"),
    ("from flashcheck.cases.case import Case", "flashcheck.properties", "properties"),
    ("from flashcheck.properties import PROPERTIES", "flashcheck.engine", "engine"),
    ("from flashcheck.engine import placement", "flashcheck.regress", "regress"),
    ("from . import corpus", "flashcheck.regress", "regress"),
    ("importlib.import_module('flashcheck.kernels')", "flashcheck.peers", "peers"),
    ("from flashcheck.mutation import mutants", "flashcheck.cli.commands", "cli"),
    ("import torch, numpy", "flashcheck", "core"),
])
def test_the_checker_allows_the_layer_and_those_below(statement, package, layer):
    assert verifier_violations(statement, package, layer) == []


# -- no import loop inside the core ----------------------------------------------------------------


def core_module_files() -> dict[str, Path]:
    """The core's modules (names below flashcheck, e.g. ``cases.case`` or ``protocol``; the
    packages' ``__init__`` left out) and their files."""
    files = {name: VERIFIER / f"{name}.py" for name in CORE_MODULES}
    for package in CORE_PACKAGES:
        files.update({f"{package}.{path.stem}": path for path in (VERIFIER / package).glob("*.py")
                      if path.stem != "__init__"})
    return files


def core_import_graph() -> dict[str, set[str]]:
    """For each core module, the core modules it imports (at the top or inside a function)."""
    files = core_module_files()
    packages = frozenset({"flashcheck"} | {f"flashcheck.{package}" for package in CORE_PACKAGES})
    graph = {}
    for name, path in sorted(files.items()):
        package = ".".join(["flashcheck", *name.split(".")[:-1]])
        imported = {module.removeprefix("flashcheck.") for _, module in
                    imported_modules(path.read_text(), package, packages)}
        graph[name] = imported & files.keys() - {name}
    return graph


def import_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as the path of modules around it, or None when it has none."""
    state: dict[str, str] = {}  # "open" while on the path, "done" once explored
    path: list[str] = []

    def visit(node):
        state[node] = "open"
        path.append(node)
        for successor in sorted(graph.get(node, ())):
            if state.get(successor) == "open":
                return path[path.index(successor):] + [successor]
            if successor not in state and (cycle := visit(successor)):
                return cycle
        path.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_finder_sees_a_loop_through_a_function_level_import():
    assert import_cycle({"protocol": {"divergences"}, "divergences": {"protocol"}}) == \
        ["divergences", "protocol", "divergences"]
    assert import_cycle({"protocol": {"divergences"}, "divergences": set()}) is None


def test_the_core_graph_follows_imports_into_the_cores_packages():
    assert imported_modules("from flashcheck.cases import masks, phases as case_phases", "flashcheck.oracle",
                            frozenset({"flashcheck.cases"})) == [(1, "flashcheck.cases.masks"), (1, "flashcheck.cases.phases")]
    graph = core_import_graph()
    assert {"cases.case", "oracle.reference", "protocol", "divergences"} <= graph.keys()
    assert "cases.masks" in graph["oracle.reference"] and "oracle.compare" in graph["protocol"]


def test_the_cores_modules_import_one_another_without_a_loop():
    # A loop forces one of its imports inside a function, and the module order to matter.
    assert import_cycle(core_import_graph()) is None
