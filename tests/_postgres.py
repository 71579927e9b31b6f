"""A real PostgreSQL server for the store's contract tests, started by the tests themselves.

One server per test process, on a Unix socket in a temporary folder, trust
authentication, stopped at exit; each test gets a database of its own. The
server's programs come from Debian's packages (``/usr/lib/postgresql/*/bin``);
under CI (``$CI`` set) a missing server is installed with apt-get and a
server that does not start fails the test. Elsewhere, with no PostgreSQL or no
psycopg, the tests are skipped with a note saying what is missing.
"""

from __future__ import annotations

import atexit
import glob
import itertools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

_server: tuple[str, int] | None = None
_why_not: str | None = None
_names = itertools.count()


def _unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"PostgreSQL is required under CI: {why}")
    pytest.skip(f"no PostgreSQL here ({why}); CI installs it")


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found and os.environ.get("CI") and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, timeout=600)
        subprocess.run(
            ["apt-get", "install", "-y", "-q", "--no-install-recommends", "postgresql"],
            env=env,
            capture_output=True,
            timeout=900,
        )
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def _as_postgres() -> list[str]:
    """initdb and the server refuse to run as root: as root, run them as the ``postgres`` user."""
    if os.geteuid() != 0:
        return []
    return ["runuser", "-u", "postgres", "--"]


def _start() -> tuple[str, int]:
    global _server, _why_not
    if _server is not None:
        return _server
    if _why_not is not None:
        _unavailable(_why_not)
    bin_dir = _bin_dir()
    if bin_dir is None:
        _why_not = "no initdb under /usr/lib/postgresql/*/bin"
        _unavailable(_why_not)
        raise AssertionError  # not reached
    root = Path(tempfile.mkdtemp(prefix="acp-types-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(sock, "postgres")
    port = 20000 + os.getpid() % 20000
    run_as = _as_postgres()
    init = subprocess.run(
        [*run_as, str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if init.returncode != 0:
        _why_not = f"initdb failed: {init.stderr.strip()[-300:]}"
        _unavailable(_why_not)
    options = f"-k {sock} -p {port} -c listen_addresses='' -c fsync=off"
    start = subprocess.run(
        [*run_as, str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "start"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if start.returncode != 0:
        log = (root / "log").read_text(errors="replace")[-300:] if (root / "log").exists() else start.stderr
        _why_not = f"the server did not start: {log.strip()}"
        _unavailable(_why_not)

    def stop() -> None:
        subprocess.run(
            [*run_as, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(root, ignore_errors=True)

    atexit.register(stop)
    _server = (str(sock), port)
    return _server


def postgres_dsn(request: pytest.FixtureRequest) -> str:
    """A connection string to a fresh, empty database on the test server."""
    try:
        import psycopg
    except ImportError:
        _unavailable("psycopg is not installed in this environment")
        raise AssertionError from None  # not reached
    sock, port = _start()
    name = f"t{os.getpid()}_{next(_names)}"
    base = f"host={sock} port={port} user=postgres"
    with psycopg.connect(f"{base} dbname=postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]  # a name made here, not input
    return f"{base} dbname={name}"
