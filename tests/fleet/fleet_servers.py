"""Real Redis and PostgreSQL servers for the fleet tests, started and stopped by the tests.

:class:`RedisServer` runs ``redis-server`` on a free loopback port with no persistence;
:class:`PostgresServer` runs ``initdb`` + ``pg_ctl`` on a temporary data directory and
a free port (as the ``postgres`` user when the tests run as root, since PostgreSQL
refuses to run as root). Both can be killed and started again on the same port, for
the fault tests. Neither is a mock: the tests talk to the real thing.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

REDIS_MISSING = "redis-server is not installed (Debian/Ubuntu: apt-get install -y redis-server)"
POSTGRES_MISSING = (
    "PostgreSQL server binaries (initdb, pg_ctl) are not installed (Debian/Ubuntu: apt-get install -y postgresql)"
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PortTaken(Exception):
    """The server could not listen: another process took the port after it was picked."""


def wait_for(condition, timeout: float = 20.0, what: str = "condition") -> None:  # type: ignore[no-untyped-def]
    """Poll ``condition`` until it is true; AssertionError naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


class RedisServer:
    """One ``redis-server`` process; ``url`` stays the same across :meth:`restart`."""

    def __init__(self, *extra: str) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise FileNotFoundError(REDIS_MISSING)
        self.binary = binary
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="toolrt-redis-"))
        self.log = self.dir / "redis.log"
        self.extra = extra
        self.process: subprocess.Popen[bytes] | None = None
        self.started = False
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        """Start on :attr:`port`. The first start moves to another free port when this one
        was taken meanwhile (another test worker's server); a restart keeps its port."""
        for _attempt in range(5):
            try:
                return self._start_once()
            except PortTaken:
                if self.started:
                    raise
                self.port = free_port()
                self.url = f"redis://127.0.0.1:{self.port}/0"
        return self._start_once()

    def _start_once(self) -> RedisServer:
        argv = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.dir),
            "--protected-mode",
            "no",
            *self.extra,
        ]
        self.log.unlink(missing_ok=True)
        self.process = subprocess.Popen(
            [*argv, "--logfile", str(self.log)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        wait_for(lambda: self._pings(), what=f"redis-server on port {self.port}")
        self.started = True
        return self

    def _pings(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            said = self.log.read_text(errors="replace") if self.log.exists() else ""
            if "Address already in use" in said:
                raise PortTaken(self.port)
            raise AssertionError(f"redis-server exited with {self.process.returncode}: {said[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def client(self):  # type: ignore[no-untyped-def]
        import redis

        return redis.Redis.from_url(self.url)

    def kill(self) -> None:
        """SIGKILL: no shutdown, nothing saved."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        wait_for(lambda: not _port_open(self.port), what="the killed redis-server's port to close")

    def pause(self) -> None:
        """SIGSTOP: the server stops answering but keeps its connections (a slow server)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def restart(self) -> None:
        self.kill()
        self.start()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def _pg_bindir() -> Path | None:
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        found = Path(
            subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False).stdout.strip()
        )
        if (found / "initdb").exists():
            return found
    initdb = shutil.which("initdb")
    if initdb is not None:
        return Path(initdb).parent
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return candidates[-1].parent if candidates else None


class PostgresServer:
    """One PostgreSQL cluster in a temporary directory; :meth:`kill` is an immediate stop."""

    def __init__(self) -> None:
        bindir = _pg_bindir()
        if bindir is None:
            raise FileNotFoundError(POSTGRES_MISSING)
        self.bindir = bindir
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="toolrt-pg-"))
        self.data = self.root / "data"
        self.socket_dir = self.root / "sock"
        self.socket_dir.mkdir()
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            # PostgreSQL refuses to run as root: run it as the postgres user, in folders it owns.
            user = pwd.getpwnam("postgres")
            for path in (self.root, self.socket_dir):
                os.chown(path, user.pw_uid, user.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.dsn = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *argv: str) -> None:
        done = subprocess.run(
            [*self.as_user, *argv], capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv[:2])} failed ({done.returncode}): {done.stdout}{done.stderr}")

    def init(self) -> PostgresServer:
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "--auth=trust",
            "--username=postgres",
            "--no-sync",
            "-E",
            "UTF8",
        )
        return self.start()

    def start(self) -> PostgresServer:
        options = (
            f"-p {self.port} -k {self.socket_dir} -h 127.0.0.1"
            " -c fsync=off -c full_page_writes=off -c max_connections=200"
        )
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.root / "log"),
            "-w",
            "-t",
            "60",
            "start",
        )
        return self

    def kill(self) -> None:
        """Stop at once (``-m immediate``): clients see their connections drop."""
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        wait_for(lambda: not _port_open(self.port), what="the stopped PostgreSQL's port to close")

    def restart(self) -> None:
        self.kill()
        self.start()

    def create_database(self, name: str) -> str:
        """A new empty database; its DSN."""
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            try:
                self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")
            except RuntimeError:
                pass
        shutil.rmtree(self.root, ignore_errors=True)
