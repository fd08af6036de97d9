"""A real ``redis-server`` for the tests of the shared database, on a free loopback port.

Started by the tests themselves and stopped after them (Debian's ``redis-server`` package,
which ``ci/cpu.sh`` installs; where the binary is missing the tests are skipped, and say why).
Nothing is persisted: no RDB snapshots, no append-only file.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

BINARY = shutil.which("redis-server")
needs_redis_server = pytest.mark.skipif(
    BINARY is None, reason="needs Debian's redis-server on PATH (ci/cpu.sh installs it)")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RedisServer:
    """One ``redis-server`` process on 127.0.0.1; :attr:`url` is its database 0."""

    def __init__(self, folder: Path):
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._process = subprocess.Popen(
            [BINARY, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(folder)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._wait_until_it_answers()

    def _wait_until_it_answers(self, seconds: float = 20.0) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"redis-server exited with status {self._process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as connection:
                    connection.sendall(b"PING\r\n")
                    if connection.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"redis-server on port {self.port} did not answer within {seconds} s")

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait(timeout=30)
