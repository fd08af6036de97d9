"""Output paths checked before any work: a command or the pytest plugin refuses a file or a
folder it could not write at the end, with one line naming the option, and changes nothing."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def check_writable_file(path, argument: str) -> None:
    """Raise ValueError, naming ``argument`` and ``path``, unless a file can be written at
    ``path``: an existing folder holds it, and it is not a folder itself. Changes nothing, so
    that a command can refuse before it starts any work: beyond the permission bits (which do
    not bind root, and say nothing of /proc or a read-only mount), it opens an existing file
    for appending without writing, or creates the missing file and removes it again."""
    if not str(path):
        raise ValueError(f"{argument}: expected a file name, got an empty one")
    target = Path(path)
    folder = target.parent
    if target.is_dir():
        raise ValueError(f"{argument} {path}: expected a file, found a folder")
    if not folder.exists():
        raise ValueError(f"{argument} {path}: the folder {folder} does not exist (expected an existing folder "
                         f"to write the file in)")
    if not folder.is_dir():
        raise ValueError(f"{argument} {path}: expected a folder to write the file in, found a file at {folder}")
    if target.exists() and not os.access(target, os.W_OK):
        raise ValueError(f"{argument} {path}: the file is not writable")
    if not target.exists() and not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{argument} {path}: the folder {folder} is not writable")
    try:
        if target.exists():
            with open(target, "a"):
                pass
        else:
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            os.unlink(target)
    except OSError as error:
        raise ValueError(f"{argument} {path}: cannot be written ({error.strerror or error})") from None


def check_writable_folder(path, argument: str, given=None) -> None:
    """Raise ValueError, naming ``argument`` and what was given for it (``given``, by default
    ``path``), unless ``path`` is a writable folder or can be made one: the nearest of it and
    its parents that exists is a folder this process may write in: by its permission bits, and
    by creating a folder in it and removing it again (nothing is left behind)."""
    given = path if given is None else given
    existing = Path(path)
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        where = "" if existing == Path(given) else f" at {existing}"
        raise ValueError(f"{argument} {given}: expected a folder, found a file{where}")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"{argument} {given}: the folder {existing} is not writable")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".flashcheck-probe-", dir=existing))
    except OSError as error:
        raise ValueError(f"{argument} {given}: the folder {existing} is not writable "
                         f"({error.strerror or error})") from None
