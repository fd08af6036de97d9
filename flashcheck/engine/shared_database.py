"""A Redis server that the runs of several machines share (``--database redis://HOST:PORT/DB``).

What a run stores goes there as well as to its local folder: hypothesis's example database
(a :class:`hypothesis.extra.redis.RedisExampleDatabase` multiplexed with the local
:class:`~hypothesis.database.DirectoryBasedExampleDatabase`) and the crash store
(:class:`SharedCrashes`, beside the local ``crashes.json``). So a failure, crash or hang
that one machine found is replayed first by the next run on any machine sharing the server.

The server is checked before any work (:func:`check_reachable`): a malformed URL, an
unreachable server or a missing ``redis`` client is a usage error naming ``--database``. If
the server becomes unreachable during a run, the run goes on with its local folder alone:
one warning per process, nothing lost locally, the exit status unchanged.

Warnings and errors show the URL with its password starred out. Keys:
``flashcheck:<implementation>:examples:...`` (hypothesis's) and
``flashcheck:<implementation>:crashes`` (a set of JSON entries, so that concurrent writers
neither lose nor duplicate one another's entries). ``redis`` is imported only when a URL is
given; it comes with the ``redis`` extra.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from urllib.parse import urlsplit

from hypothesis.database import ExampleDatabase

#: The scheme of a shared database's ``--database`` value.
SCHEME = "redis"
#: What installs the Redis client.
INSTALL = "pip install 'flashcheck[redis]'"
#: Seconds to wait for the server before taking it for unreachable (at start: a usage error;
#: during a run: the local folder alone from then on).
TIMEOUT_SECONDS = 5.0


def is_url(value) -> bool:
    """Whether a ``--database`` value is a URL (a server, which :func:`parse` accepts only as
    ``redis://``) rather than a folder."""
    return isinstance(value, str) and "://" in value


def parse(url: str, option: str = "--database") -> tuple[str, int, int, str | None]:
    """``(host, port, db, password)`` of ``redis://[:PASSWORD@]HOST:PORT/DB`` (port 6379 and db
    0 when left out, no password); ValueError naming ``option`` (the command line's, by default
    fuzz's ``--database``) otherwise."""
    expected = f"expected {SCHEME}://[:PASSWORD@]HOST:PORT/DB (or a folder), got {shown(url)!r}"
    parts = urlsplit(url)
    try:
        port = parts.port or 6379
    except ValueError:
        raise ValueError(f"{option}: the port is not a number: {expected}") from None
    if (parts.scheme != SCHEME or not parts.hostname or parts.query or parts.fragment
            or (parts.username and not parts.password)):
        raise ValueError(f"{option}: {expected}")
    path = parts.path.strip("/")
    if path and not path.isdigit():
        raise ValueError(f"{option}: the database is not a number: {expected}")
    return parts.hostname, port, int(path or 0), parts.password


def shown(url: str) -> str:
    """``url`` as messages show it: its password, if any, starred out."""
    parts = urlsplit(url)
    return url if not parts.password else url.replace(f":{parts.password}@", ":***@", 1)


def _redis_module(option: str = "--database"):
    try:
        import redis
    except ImportError:
        raise ValueError(f"{option}: a Redis database needs the redis client, which is not installed: "
                         f"{INSTALL}") from None
    return redis


def client(url: str, option: str = "--database"):
    """A ``redis.Redis`` client of ``url`` whose calls give up after :data:`TIMEOUT_SECONDS`;
    ValueError naming ``option`` where ``url`` is malformed or the client is missing."""
    host, port, db, password = parse(url, option)
    return _redis_module(option).Redis(host=host, port=port, db=db, password=password,
                                       socket_timeout=TIMEOUT_SECONDS, socket_connect_timeout=TIMEOUT_SECONDS)


def local_and_shared(given: str, local: str, option: str = "--database") -> tuple[str, str | None]:
    """``(local folder, shared URL or None)`` of a database option's value ``given``: a Redis
    URL, checked to answer (ValueError naming ``option`` otherwise), is shared and multiplexed
    with the folder ``local``; anything else is the folder itself, shared with no one."""
    if not is_url(given):
        return given, None
    check_reachable(given, option)
    return local, given


def check_reachable(url: str, option: str = "--database") -> None:
    """ValueError naming ``option`` unless ``url`` is well formed and its server answers."""
    redis = _redis_module(option)
    try:
        client(url, option).ping()
    except redis.exceptions.RedisError as error:
        raise ValueError(f"{option}: the Redis server at {shown(url)} does not answer ({error})") from None


#: The servers this process has warned about: each warning is given once per process, however
#: many stores (examples, crashes, failures) use the server.
_WARNED: set[str] = set()


class _Reach:
    """Whether the server still answers, for one store: after the first failure every later use
    is skipped, so that a run goes on with its local folder; the failure is warned about once
    per server and process (:data:`_WARNED`)."""

    def __init__(self, url: str):
        self.url = shown(url)
        self.up = True
        self._errors = _redis_module().exceptions.RedisError

    def attempt(self, action, default=None):
        if not self.up:
            return default
        try:
            return action()
        except self._errors as error:
            self.up = False
            if self.url not in _WARNED:
                _WARNED.add(self.url)
                print(f"flashcheck: warning: the shared database {self.url} stopped answering ({error}); this "
                      f"process goes on with its local folder alone", file=sys.stderr, flush=True)
            return default


class _Degrading(ExampleDatabase):
    """An example database whose failures :class:`_Reach` turns into one warning."""

    def __init__(self, inner: ExampleDatabase, reach: _Reach):
        super().__init__()
        self.inner = inner
        self.reach = reach

    def save(self, key: bytes, value: bytes) -> None:
        self.reach.attempt(lambda: self.inner.save(key, value))

    def fetch(self, key: bytes):
        return iter(self.reach.attempt(lambda: list(self.inner.fetch(key)), default=[]))

    def delete(self, key: bytes, value: bytes) -> None:
        self.reach.attempt(lambda: self.inner.delete(key, value))

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self.reach.attempt(lambda: self.inner.move(src, dest, value))


def _prefix(folder) -> str:
    """The keys' prefix of the implementation whose example database folder is ``folder``
    (:func:`flashcheck.engine.crash_store.database_folder`): its name, which is the implementation's."""
    return f"flashcheck:{Path(folder).name}:"


def holds_examples(url: str, folder) -> bool:
    """Whether the server of ``url`` holds any examples of the implementation of ``folder``
    (False when it does not answer)."""
    pattern = _prefix(folder) + "examples:*"
    return bool(_Reach(url).attempt(lambda: next(client(url).scan_iter(match=pattern, count=100), None), None))


def examples(url: str, folder) -> ExampleDatabase:
    """The shared part of the example database of the implementation of ``folder`` (multiplex
    it with the local folder: :func:`flashcheck.engine.crash_store.example_database`)."""
    from hypothesis.extra.redis import RedisExampleDatabase

    shared = RedisExampleDatabase(client(url), key_prefix=(_prefix(folder) + "examples:").encode())
    return _Degrading(shared, _Reach(url))


class SharedCrashes:
    """The crash store's entries (``{"property", "case", "kind"}``) of the implementation of
    ``folder`` on the server of ``url``: a set of JSON strings, which concurrent writers update
    atomically. Unreachable, it reads as empty and writes nothing (one warning)."""

    def __init__(self, url: str, folder):
        self._redis = client(url)
        self._key = _prefix(folder) + "crashes"
        self._reach = _Reach(url)

    def _members(self) -> list[tuple[bytes, dict]]:
        """``(stored member, entry)`` of each well-formed entry; others are left alone."""
        members = self._reach.attempt(lambda: self._redis.smembers(self._key), default=set())
        found = []
        for member in sorted(members):
            try:
                entry = json.loads(member)
            except ValueError:
                continue
            if isinstance(entry, dict) and isinstance(entry.get("property"), str) and isinstance(entry.get("case"), str):
                found.append((member, entry))
        return found

    def entries(self) -> list[dict]:
        return [entry for _, entry in self._members()]

    def add(self, prop: str, spec: str, kind: str) -> None:
        self.remove(prop, spec)
        self._reach.attempt(lambda: self._redis.sadd(self._key, _member(prop, spec, kind)))

    def remove(self, prop: str, spec: str) -> None:
        stale = [member for member, entry in self._members() if (entry["property"], entry["case"]) == (prop, spec)]
        if stale:
            self._reach.attempt(lambda: self._redis.srem(self._key, *stale))


def _member(prop: str, spec: str, kind) -> str:
    return json.dumps({"property": prop, "case": spec, "kind": kind}, sort_keys=True)


#: The fields of a :class:`~flashcheck.engine.fuzz_result.Failure` a shared failure keeps.
_FAILURE_FIELDS = ("kind", "property", "case", "evidence", "impl", "case_timeout")


class SharedFailures:
    """The shrunk failures of the campaigns of the implementation of ``folder`` on the server of
    ``url``, by signature. Unreachable, it reads as empty and writes nothing (one warning)."""

    def __init__(self, url: str, folder):
        self._redis = client(url)
        self._key = _prefix(folder) + "failures"
        self._reach = _Reach(url)

    def load(self) -> dict:
        """Signature -> :class:`~flashcheck.engine.fuzz_result.Failure` of every well-formed entry."""
        from flashcheck.engine.fuzz_result import Failure

        stored = self._reach.attempt(lambda: self._redis.hgetall(self._key), default={})
        found = {}
        for signature, raw in stored.items():
            try:
                fields = json.loads(raw)
                failure = Failure(**{name: fields[name] for name in _FAILURE_FIELDS})
            except (ValueError, TypeError, KeyError):
                continue  # not one of ours: left alone
            found[signature.decode() if isinstance(signature, bytes) else signature] = failure
        return found

    def save(self, failure) -> None:
        """Keep ``failure`` under its signature, unless a failure of that signature is kept."""
        fields = json.dumps({name: getattr(failure, name) for name in _FAILURE_FIELDS}, sort_keys=True)
        self._reach.attempt(lambda: self._redis.hsetnx(self._key, failure.signature, fields))

