"""The import layers: the kernel (``kernels/``, installed as ``flashcheck.kernels``) sits
below the verifier. Its modules import only each other, torch, triton and the standard
library, never the rest of flashcheck; tools that drive the kernel with the verifier's
machinery live in :mod:`flashcheck.devtools`.

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


def imported_modules(source: str, package: str) -> list[tuple[int, str]]:
    """``(line, absolute module name)`` of every import in ``source``, the source of a module
    of ``package``: ``import`` and ``from ... import`` statements anywhere in the module
    (relative ones resolved against ``package``), and ``importlib.import_module`` or
    ``__import__`` calls with a literal name. ``from flashcheck import x`` yields
    ``flashcheck.x``, the module it reaches into."""
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
            if module == "flashcheck" or not node.module:
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
