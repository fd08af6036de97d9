"""Who raised an exception caught around flashcheck's use of an implementation: the
implementation declining the case on purpose, the implementation otherwise, or flashcheck's
own code.

Who raised an exception is read from its traceback. The implementation is handed to the
property wrapped (:class:`_Calling`), so that every call into it leaves a frame of that
wrapper in the traceback of whatever it raises; so does torch's autograd entry, through
which a property runs the backward pass of what the implementation returned (flashcheck's
own reference computes its gradients analytically, never by autograd). Except where autograd
refuses the arguments of that call (an input not in the graph without ``allow_unused``, the
implicit gradient of a tensor that is not a scalar, ...): raised in autograd's own frames, or
by its engine's checks of the arguments, with no frame of a backward function below, that
error is the caller's, flashcheck's when flashcheck made the call. An error raised by the
backward functions the implementation recorded (a custom ``autograd.Function``'s, or a
node of torch's own raising in its C++ engine) stays the implementation's. So is one raised by
the implementation's own code outside a call into it (its innermost frame outside the
libraries lies in the implementation's source file: a method of a tensor subclass it
returned, say, which flashcheck's code then used). Any other exception was raised by
flashcheck's code: the properties, the reference, the comparisons, or a library they called.
"""

from __future__ import annotations

import dis
import enum
import functools
import importlib.util
import re
import sysconfig
import traceback
from pathlib import Path

import torch

class Raiser(enum.Enum):
    """Who raised an exception caught around flashcheck's use of an implementation (see
    :func:`raised_by`)."""

    DECLINE = "the implementation, declining the case"
    IMPLEMENTATION = "the implementation"
    FLASHCHECK = "flashcheck's own code"


def calling(impl):
    """``impl`` wrapped as flashcheck calls it: the same call and attributes, each call leaving
    a frame in the traceback of whatever it raises, by which :func:`raised_by` tells the
    implementation's errors from flashcheck's."""
    return _Calling(impl)


def raised_by(error: BaseException, impl) -> Raiser:
    """Who raised ``error``, caught around code that used ``impl`` only through
    :func:`calling`: the implementation declining the case on purpose
    (:func:`deliberate_decline`); the implementation otherwise (inside a call into it, a
    backward pass through what it returned, or its own code outside a call); else
    flashcheck's own code. The module docstring says how a traceback tells them apart."""
    if not (raised_by_implementation(error) or _raised_in_implementation_code(error, impl)):
        return Raiser.FLASHCHECK
    return Raiser.DECLINE if deliberate_decline(error, impl) else Raiser.IMPLEMENTATION


def deliberate_decline(error: BaseException, impl) -> bool:
    """Whether ``error`` is the deliberate decline of the implementation ``impl``: a
    ``NotImplementedError`` raised by a ``raise`` statement in the implementation's own code,
    inside a call flashcheck made to it. Not one raised by flashcheck's checking code (the
    properties, the reference, the comparisons: flashcheck's shipped adapters count as
    implementations), by torch, Triton, numpy or the standard library, by another installed
    package the implementation calls (a library's refusal is not the implementation's decline,
    wherever the packages are installed), nor one a C function raised under a call the
    implementation made (torch's "Could not run 'aten::...'" errors)."""
    if not isinstance(error, NotImplementedError) or not raised_by_implementation(error):
        return False
    frames = list(traceback.walk_tb(error.__traceback__))
    frame, _ = frames[-1]
    code = frame.f_code
    if _is_foreign(code.co_filename, _own_packages(impl)) or _is_checking_code(code.co_filename):
        return False
    innermost = error.__traceback__
    while innermost.tb_next is not None:
        innermost = innermost.tb_next
    return _opname(code, innermost.tb_lasti) == "RAISE_VARARGS"


# -- reading the traceback -------------------------------------------------------------------


class _Calling:
    """``impl`` as a property sees it: the same call and attributes. Each call runs
    through :meth:`__call__`, whose frame in a traceback marks what the implementation
    raised (see :func:`_raised_by_implementation`)."""

    __slots__ = ("_impl",)

    def __init__(self, impl):
        object.__setattr__(self, "_impl", impl)

    def __call__(self, *args, **kwargs):
        return self._impl(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._impl, name)

    def __repr__(self) -> str:
        return repr(self._impl)


def _autograd_entries() -> frozenset:
    """The code objects of torch's autograd entries, ``torch.autograd.grad`` and
    ``torch.autograd.backward`` (``Tensor.backward`` calls the latter): a backward pass runs
    what the implementation recorded in the forward."""
    return frozenset(code for code in (getattr(entry, "__code__", None)
                                       for entry in (torch.autograd.grad, torch.autograd.backward))
                     if code is not None)


_AUTOGRAD_ENTRIES = _autograd_entries()
#: Code objects whose frames lie between flashcheck's code and the implementation's: the call
#: wrapper, and torch's autograd entries.
_BOUNDARIES = _AUTOGRAD_ENTRIES | {_Calling.__call__.__code__}

#: Files of torch's autograd entries: its argument checks in Python (``_make_grads``, say) and
#: the call into the C++ engine (``torch.autograd.graph._engine_run_backward``). Hooks and
#: backward functions run from the engine in frames of other files (``torch.autograd.function``,
#: the implementation's own).
_AUTOGRAD_ENTRY_FILES = frozenset(module.__file__ for module in (torch.autograd, torch.autograd.graph))
_ENGINE_CALL = getattr(getattr(torch.autograd.graph, "_engine_run_backward", None), "__code__", None)

#: What torch's C++ engine raises when it refuses the arguments of a call into it
#: (``torch/csrc/autograd/python_engine.cpp``; an upstream gradient unlike its output:
#: ``validate_outputs`` on the roots, whose message a node's lacks, "Function X returned an
#: invalid gradient ..."). An input unused by the graph is found after the backward pass, but
#: is about the arguments alone, like the others.
_ENGINE_REFUSALS = re.compile(
    r"element \d+ of tensors does not require grad and does not have a grad_fn"
    r"|element \d+ of tensors tuple is neither a Tensor nor a GradientEdge"
    r"|element \d+ of gradients tuple is (not a Tensor or None|None, but the corresponding)"
    r"|got \d+ tensors and \d+ gradients"
    r"|all inputs have to be Tensors"
    r"|One of the differentiated Tensors does not require grad"
    r"|(One of the differentiated Tensors|The differentiated Tensor at index \d+) appears to not have been used "
    r"in the graph"
    r"|invalid gradient at index \d+ - "
)


def raised_by_implementation(error: BaseException) -> bool:
    """Whether ``error`` was raised inside a call into the implementation (its forward
    call, or a backward pass through what it returned), and not by autograd refusing the
    arguments of the call into it that encloses everything else (:func:`_autograd_refused`)."""
    frames = [frame for frame, _ in traceback.walk_tb(error.__traceback__)]
    for index, frame in enumerate(frames):
        if frame.f_code in _AUTOGRAD_ENTRIES:
            return not _autograd_refused(error, frames[index:])
        if frame.f_code in _BOUNDARIES:
            return True
    return False


def _autograd_refused(error: BaseException, frames: list) -> bool:
    """Whether ``error``, raised under the autograd entry whose frame is ``frames[0]``
    (the innermost last), is autograd refusing that call's arguments, which the caller
    chose: raised in autograd's own Python code before the engine starts, or by the engine's
    checks of the arguments (:data:`_ENGINE_REFUSALS`). Not so when any frame under the entry
    lies outside autograd's entry files (a backward function, a hook, a tensor subclass's
    ``__torch_function__``, code that ran for the implementation), nor for any other error
    the engine raised: a node of the recorded graph raising in C++ leaves no Python frame."""
    if any(frame.f_code.co_filename not in _AUTOGRAD_ENTRY_FILES for frame in frames):
        return False
    innermost = frames[-1].f_code
    if innermost is _ENGINE_CALL:
        return _ENGINE_REFUSALS.match(str(error)) is not None
    return innermost.co_filename == torch.autograd.__file__


def _raised_in_implementation_code(error: BaseException, impl) -> bool:
    """Whether ``error`` was raised by the implementation's own code outside a call into it:
    its innermost frame outside the libraries and the other installed packages lies in the
    implementation's code (:func:`_implementation_files`, or the installed package it belongs
    to), e.g. in a method of a tensor subclass it returned, which flashcheck's code then used."""
    files, own = _implementation_files(impl), _own_packages(impl)
    for frame, _ in reversed(list(traceback.walk_tb(error.__traceback__))):
        filename = frame.f_code.co_filename
        if not _is_foreign(filename, own):
            path = _resolved(filename)
            return not _is_checking_code(filename) and (path in files or _under(path, own))
    return False


def _implementation_files(impl) -> frozenset:
    """The source files of ``impl``: of its code (a function's or its ``__call__``'s) and of
    the module it names as its own; never flashcheck's checking code nor a library's."""
    files = set()
    for holder in (impl, getattr(impl, "__call__", None)):
        code = getattr(holder, "__code__", None)
        if code is not None:
            files.add(code.co_filename)
    for module in _own_modules(impl):
        if getattr(module, "__file__", None):
            files.add(module.__file__)
    return frozenset(_resolved(file) for file in files if not _is_library(file) and not _is_checking_code(file))


def _own_modules(impl) -> list:
    """The modules ``impl`` and its type name as their own (``__module__``), where imported."""
    import sys

    names = (getattr(owner, "__module__", None) or "" for owner in (impl, type(impl)))
    return [module for module in map(sys.modules.get, names) if module is not None]


def _own_packages(impl) -> tuple[str, ...]:
    """Where the installed packages that ``impl`` belongs to lie (the folder of the top-level
    package of its module, or that module's file), for an implementation installed in a
    site-packages folder; none for one that is not (a checkout's ``tests``, say, whose other
    files are not the implementation's)."""
    folders = []
    for module in _own_modules(impl):
        top = module.__name__.partition(".")[0]
        if top == "flashcheck":  # its adapters and kernels are known by their folders (_is_checking_code)
            continue
        location = _package_folder(top) or _module_file(top)
        if location and _in_site_folder(location):
            folders.append(location)
    return tuple(folders)


def _module_file(name: str) -> str | None:
    """The file of the (single-file) module ``name``, found without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    return _resolved(spec.origin) if spec is not None and spec.has_location and spec.origin else None


def _package_folder(name: str) -> str | None:
    """The folder of package ``name``, found without importing it (Triton must not be
    imported before ``TRITON_INTERPRET`` is settled): where it really lies, wherever and
    however it is installed."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return _resolved(list(spec.submodule_search_locations)[0])


def _resolved(path) -> str:
    return str(Path(path).resolve())


def _under(path: str, folders) -> bool:
    """Whether the resolved ``path`` is one of ``folders`` or lies inside one of them."""
    return any(path == folder or path.startswith(folder.rstrip("/") + "/") for folder in folders)


#: The folders pip and the distributions' own packages install into.
_SITE_FOLDER_NAMES = frozenset({"site-packages", "dist-packages"})


@functools.lru_cache(maxsize=1)
def _site_folders() -> tuple[str, ...]:
    """The folders installed packages lie in: ``site``'s, the user's, sysconfig's ``purelib``
    and ``platlib``, and every folder on ``sys.path`` named site-packages or dist-packages.
    Each source is optional (some virtualenvs' ``site`` has no ``getsitepackages``)."""
    import site
    import sys

    folders: list[str] = []
    for name in ("getsitepackages", "getusersitepackages"):
        try:
            found = getattr(site, name)()
        except Exception:  # noqa: BLE001 - absent, or failing, in some interpreters' site module
            continue
        folders += [found] if isinstance(found, str) else list(found)
    try:
        paths = sysconfig.get_paths()
    except Exception:  # noqa: BLE001
        paths = {}
    folders += [paths[key] for key in ("purelib", "platlib") if paths.get(key)]
    folders += [entry for entry in sys.path if entry and Path(entry).name in _SITE_FOLDER_NAMES]
    return tuple(dict.fromkeys(_resolved(folder) for folder in folders if folder))


def _in_site_folder(path: str) -> bool:
    """Whether the resolved ``path`` lies in a folder of installed packages: one of
    :func:`_site_folders`, or any folder named site-packages or dist-packages (another
    interpreter's, or one that ``site`` does not report)."""
    return _under(path, _site_folders()) or not _SITE_FOLDER_NAMES.isdisjoint(Path(path).parts[:-1])


@functools.lru_cache(maxsize=1)
def _standard_library_folders() -> tuple[str, ...]:
    """sysconfig's ``stdlib`` and ``platstdlib``. In a virtualenv ``platstdlib`` is
    ``<venv>/lib/python3.X``, which holds the virtualenv's site-packages; so does the
    interpreter's own ``stdlib`` folder hold its site-packages: :func:`_in_standard_library`
    leaves those out."""
    paths = sysconfig.get_paths()
    return tuple(dict.fromkeys(_resolved(paths[key]) for key in ("stdlib", "platstdlib") if paths.get(key)))


def _in_standard_library(path: str) -> bool:
    """Whether the resolved ``path`` is the standard library's: under its folders, and in no
    folder of installed packages."""
    return _under(path, _standard_library_folders()) and not _in_site_folder(path)


@functools.lru_cache(maxsize=1)
def _library_folders() -> tuple[str, ...]:
    """The folders of torch, Triton and numpy, where they really lie."""
    return tuple(folder for folder in (_package_folder(name) for name in ("torch", "triton", "numpy")) if folder)


@functools.lru_cache(maxsize=256)
def _is_library(filename: str) -> bool:
    """Whether ``filename`` is the code of torch, Triton, numpy or the standard library,
    never that of a package installed beside them (flashcheck's, the implementation's)."""
    if filename.startswith("<"):  # "<frozen importlib._bootstrap>" and the like
        return True
    path = _resolved(filename)
    return _under(path, _library_folders()) or _in_standard_library(path)


def _is_foreign(filename: str, own: tuple[str, ...]) -> bool:
    """Whether ``filename`` is code neither flashcheck's nor the implementation's: a library's
    (:func:`_is_library`), or that of another installed package (one the implementation calls,
    say) than flashcheck and those in ``own`` (:func:`_own_packages`)."""
    if _is_library(filename):
        return True
    path = _resolved(filename)
    return _in_site_folder(path) and not _under(path, own) and not _under(path, _flashcheck_folders())


@functools.lru_cache(maxsize=1)
def _checking_folders() -> tuple[str, ...]:
    """flashcheck's package and its properties, where they really lie (in a checkout the
    properties are a folder beside the package, installed they are inside it)."""
    return tuple(folder for folder in map(_package_folder, ("flashcheck", "flashcheck.properties")) if folder)


#: flashcheck's packages that are implementations, not checking code: flashcheck.peers (the
#: adapters of torch's and other libraries' kernels, and the registry that resolves them) and
#: flashcheck.kernels (the project kernel and its mutants).
_SHIPPED_IMPLEMENTATION_PACKAGES = ("flashcheck.peers", "flashcheck.kernels")


@functools.lru_cache(maxsize=1)
def _shipped_implementation_folders() -> tuple[str, ...]:
    return tuple(folder for folder in map(_package_folder, _SHIPPED_IMPLEMENTATION_PACKAGES) if folder)


def _flashcheck_folders() -> tuple[str, ...]:
    return _checking_folders() + _shipped_implementation_folders()


@functools.lru_cache(maxsize=256)
def _is_checking_code(filename: str) -> bool:
    path = _resolved(filename)
    return _under(path, _checking_folders()) and not _under(path, _shipped_implementation_folders())


def _opname(code, offset: int) -> str | None:
    for instruction in dis.get_instructions(code):
        if instruction.offset == offset:
            return instruction.opname
    return None


def where_raised(error: BaseException, impl) -> str:
    """Where the implementation's code raised ``error``: its innermost frame outside
    flashcheck's checking code, the libraries and the other installed packages, or nothing
    when there is none."""
    own = _own_packages(impl)
    for frame, line in reversed(list(traceback.walk_tb(error.__traceback__))):
        filename = frame.f_code.co_filename
        if not _is_foreign(filename, own) and not _is_checking_code(filename):
            return f"\n  raised at {filename}:{line} in {frame.f_code.co_name}"
        if frame.f_code in _BOUNDARIES:
            break
    return ""
