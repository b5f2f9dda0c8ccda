"""Where the tests find the official ACP JSON schemas, v2 and v1 (they are not committed to this repository).

Looked up in order, for protocol version N: the environment variable (``$ACP_SCHEMA_DIR`` for v2,
``$ACP_V1_SCHEMA_DIR`` for v1); the workspace copy in ``../shared/spec/schema/vN``; the copy shipped
in the npm package ``@agentclientprotocol/sdk`` (``schema/vN`` in ``.cache/acp-schema/package`` as
unpacked by ``.ci/run``, or in ``tests/interop/node_modules``). The package (2.4.0) ships both
versions.

When none of these holds the schema, the first test that needs it installs the interop tests' pinned npm
packages (``npm install`` in ``tests/interop``, as the interop tests do anyway), so a fresh clone's first
test run uses the same schema as every later run and skips nothing. Only without npm (or when that install
fails) is the schema missing: in CI that is a failure with a clear message; elsewhere the tests that need it
skip with that reason.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
NPM_HINT = "npm pack @agentclientprotocol/sdk@2.4.0 && tar xzf agentclientprotocol-sdk-2.4.0.tgz"
ENV_VARS = {2: "ACP_SCHEMA_DIR", 1: "ACP_V1_SCHEMA_DIR"}

INTEROP = REPO / "tests" / "interop"
SDK_DIR = INTEROP / "node_modules" / "@agentclientprotocol" / "sdk"
SDK_V1_DIR = INTEROP / "node_modules" / "acp-sdk-v1"
TS_V1_AGENT = SDK_V1_DIR / "dist" / "examples" / "agent.js"
ACPX = INTEROP / "node_modules" / "acpx" / "package.json"  # acpx, a headless v1 client (tests/interop/test_acpx.py)
INSTALL_LOCK = INTEROP / ".npm-install.lock"


def candidate_dirs(version: int = 2) -> list[Path]:
    env = os.environ.get(ENV_VARS[version])
    dirs = [Path(env)] if env else []
    dirs += [
        REPO.parent / "shared" / "spec" / "schema" / f"v{version}",
        REPO / ".cache" / "acp-schema" / "package" / "schema" / f"v{version}",
        SDK_DIR / "schema" / f"v{version}",
    ]
    return dirs


def find_schema_dir(version: int = 2) -> Path | None:
    for directory in candidate_dirs(version):
        if (directory / "schema.json").is_file():
            return directory
    return None


def interop_packages_installed() -> bool:
    return SDK_DIR.is_dir() and TS_V1_AGENT.is_file() and ACPX.is_file()


@contextlib.contextmanager
def _interop_install_lock() -> Iterator[None]:
    """Held while one process checks and installs ``node_modules``: the suite's parallel workers (pytest-xdist)
    would otherwise run ``npm install`` into the same folder at once, or take a half-written one as installed."""
    with open(INSTALL_LOCK, "a+b") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(file, fcntl.LOCK_UN)


def install_interop_packages() -> str | None:
    """``npm install`` the pinned TypeScript SDKs into ``tests/interop/node_modules`` unless they are there.

    Returns None once they are installed, else why not (no npm on PATH, or npm's error)."""
    with _interop_install_lock():
        return _install_interop_packages()


def _install_interop_packages() -> str | None:
    if interop_packages_installed():
        return None
    npm = shutil.which("npm")
    if npm is None:
        return "npm is not on PATH (install Node.js 20 or newer with npm)"
    try:
        proc = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund"], cwd=INTEROP, capture_output=True, text=True, timeout=300
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"npm install in {INTEROP} failed: {exc}"
    if proc.returncode != 0 or not interop_packages_installed():
        return f"npm install in {INTEROP} failed ({proc.returncode}):\n{proc.stderr}"
    return None


def require_schema_dir(version: int = 2) -> Path:
    """The schema folder (installing the npm package that ships it when no copy is found), or fail (CI) /
    skip (elsewhere) naming every place that was tried."""
    found = find_schema_dir(version)
    if found is not None and found != SDK_DIR / "schema" / f"v{version}":
        return found
    why = ""
    if SDK_DIR / "schema" / f"v{version}" in candidate_dirs(version):  # (another worker may be installing it)
        problem = install_interop_packages()
        found = find_schema_dir(version)
        if found is not None:
            return found
        why = f"; {problem}" if problem else ""
    tried = ", ".join(str(d) for d in candidate_dirs(version))
    message = (
        f"official ACP v{version} schema not found (tried {tried}{why}); "
        f"get it with: {NPM_HINT} (it holds package/schema/v{version})"
    )
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)
