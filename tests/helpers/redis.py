"""A real Redis server for the shared-cache tests: Debian's ``redis-server`` on a loopback port, in a
temporary folder, without persistence; stopped when the test is done."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def skip_without_redis() -> str:
    """The path of ``redis-server``; skips the calling test where it, or ccache's Redis storage, is missing."""
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed (.ci/setup installs Debian's redis-server)")
    ccache = shutil.which("ccache")
    if ccache is None:
        pytest.skip("ccache is not installed")
    features = subprocess.run([ccache, "--version"], capture_output=True, text=True, check=False).stdout
    if "redis-storage" not in features:
        pytest.skip("this ccache has no Redis storage (ccache 4.4 or later built with hiredis)")
    return server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def redis_server(folder: Path) -> Iterator[str]:
    """A running server; yields its URL (``redis://127.0.0.1:PORT``)."""
    server = skip_without_redis()
    folder.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    cmd = [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(folder)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"redis-server did not start on port {port} (exit {proc.poll()})")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def key_count(url: str) -> int:
    """How many keys the server holds (``DBSIZE``)."""
    host, port = url.removeprefix("redis://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(b"DBSIZE\r\n")
        reply = s.recv(64)
    assert reply.startswith(b":"), reply
    return int(reply[1:].split(b"\r\n")[0])
