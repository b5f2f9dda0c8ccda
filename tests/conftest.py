"""Shared test setup: every async test runs on both asyncio and trio, and no test touches the user's own folders.

The isolation is autouse and goes through ``os.environ``, so it covers the subprocesses a test starts (agents, the
CLI, the reference agent): ``HOME`` and every ``XDG_*`` base folder point into the test's temporary directory. npm's
download cache stays where it was (``NPM_CONFIG_CACHE``, which npm reads case-insensitively), so ``npx`` agents
need not be fetched again for each test.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

#: The user's real folders as the run found them, for the test that checks a run leaves them unchanged.
REAL_HOME = os.path.expanduser("~")
REAL_FOLDERS = {
    "XDG_STATE_HOME": os.environ.get("XDG_STATE_HOME") or os.path.join(REAL_HOME, ".local", "state"),
    "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME") or os.path.join(REAL_HOME, ".cache"),
    "XDG_CONFIG_HOME": os.environ.get("XDG_CONFIG_HOME") or os.path.join(REAL_HOME, ".config"),
    "XDG_DATA_HOME": os.environ.get("XDG_DATA_HOME") or os.path.join(REAL_HOME, ".local", "share"),
}
_NPM_CACHE = os.environ.get("NPM_CONFIG_CACHE") or os.path.join(REAL_HOME, ".npm")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(autouse=True)
def _isolated_user_folders(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh HOME and XDG base folders for every test, so nothing reads or writes the user's real state."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for name, parts in (
        ("XDG_STATE_HOME", (".local", "state")),
        ("XDG_CACHE_HOME", (".cache",)),
        ("XDG_CONFIG_HOME", (".config",)),
        ("XDG_DATA_HOME", (".local", "share")),
    ):
        monkeypatch.setenv(name, str(home.joinpath(*parts)))
    monkeypatch.setenv("NPM_CONFIG_CACHE", _NPM_CACHE)
    yield home
