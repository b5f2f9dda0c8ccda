"""Shared test setup: every async test runs on both asyncio and trio, and no test touches the user's own folders.

The isolation is autouse and goes through ``os.environ``, so it covers the subprocesses a test starts (agents, the
CLI, the reference agent): ``HOME`` and every ``XDG_*`` base folder point into the test's temporary directory. npm's
download cache stays where it was (``NPM_CONFIG_CACHE``, which npm reads case-insensitively), so ``npx`` agents
need not be fetched again for each test.
"""

from __future__ import annotations

import compileall
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

#: The user's real folders as the run found them, for the test that checks a run leaves them unchanged.
REAL_HOME = os.path.expanduser("~")
REAL_FOLDERS = {
    "XDG_STATE_HOME": os.environ.get("XDG_STATE_HOME") or os.path.join(REAL_HOME, ".local", "state"),
    "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME") or os.path.join(REAL_HOME, ".cache"),
    "XDG_CONFIG_HOME": os.environ.get("XDG_CONFIG_HOME") or os.path.join(REAL_HOME, ".config"),
    "XDG_DATA_HOME": os.environ.get("XDG_DATA_HOME") or os.path.join(REAL_HOME, ".local", "share"),
}
_NPM_CACHE = os.environ.get("NPM_CONFIG_CACHE") or os.path.join(REAL_HOME, ".npm")
_REPO = Path(__file__).resolve().parent.parent

# A property test's examples share the CPU with the other parallel workers' subprocesses: no deadline per example
# (most property tests here set none anyway) and no health check on slow data generation.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")


# Keep pytest's assertion-rewritten test modules on disk even where ``PYTHONDONTWRITEBYTECODE`` is set: with it,
# each parallel worker parses and rewrites every test module anew at collection (about 8 s of CPU per worker, a
# quarter of a minute of the suite's wall time on two cores); with the rewritten bytecode kept, a run after the
# first reads it back. Only this process is affected: the subprocesses the tests start keep the variable.
sys.dont_write_bytecode = False


def pytest_configure(config: pytest.Config) -> None:
    """Compile the package's modules to bytecode once, before any test (in the main process, not in each parallel
    worker): the suite starts agents, the CLI and the runner as Python subprocesses again and again, and where
    ``PYTHONDONTWRITEBYTECODE`` is set each of them would compile the modules it imports anew (about a third of
    its start-up)."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        for folder in ("acp_session", "conformance", "tests"):  # acp_conformance's source is under conformance/
            assert (_REPO / folder).is_dir(), f"{folder}/ is gone: compile its modules' new folder instead"
            compileall.compile_dir(_REPO / folder, quiet=2)


def snapshot_acp_session_folders(folders: dict[str, str] | None = None) -> dict[str, tuple[int, int]]:
    """Every file under each base folder's ``acp-session`` subfolder: path -> (size, mtime in ns); the test run
    must leave this exactly as it found it."""
    found: dict[str, tuple[int, int]] = {}
    for base in (folders if folders is not None else REAL_FOLDERS).values():
        root = os.path.join(base, "acp-session")
        for folder, _, files in os.walk(root):
            for name in files:
                path = os.path.join(folder, name)
                try:
                    info = os.stat(path)
                except OSError:
                    continue
                found[path] = (info.st_size, info.st_mtime_ns)
    return found


def changed_files(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    """The paths added, removed or changed between two snapshots, sorted."""
    return sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))


def files_naming(paths: list[str], markers: list[str]) -> list[str]:
    """The files among ``paths`` whose text names one of ``markers`` (this run's temporary folders): what a test
    of this run wrote. On a shared machine another process may change the real folders too; those changes name
    no folder of this run."""
    found = []
    for path in paths:
        try:
            text = Path(path).read_bytes().decode("utf-8", "replace")
        except OSError:
            continue  # removed: nothing to attribute
        if any(marker in text for marker in markers):
            found.append(path)
    return found


@pytest.fixture(scope="session", autouse=True)
def _real_folders_unchanged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The whole run leaves the user's real ``acp-session`` state, cache, config and data folders unchanged: a
    file there that names this run's temporary folders (a test's session, its agent's store) fails the run at its
    end. Every process of the run has its folders elsewhere (``_isolated_run_folders``), so a change that names
    none of them is another program's on the machine (an ``acp-session`` someone runs meanwhile): not this run's
    to report."""
    before = snapshot_acp_session_folders()
    yield
    changed = changed_files(before, snapshot_acp_session_folders())
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # a parallel worker's folder is one of the run's: look for any worker's
    ours = files_naming(changed, sorted({str(base), os.path.realpath(base)}))
    assert not ours, f"the test run wrote into the user's real folders: {ours[:10]}"


_FOLDERS = (
    ("XDG_STATE_HOME", (".local", "state")),
    ("XDG_CACHE_HOME", (".cache",)),
    ("XDG_CONFIG_HOME", (".config",)),
    ("XDG_DATA_HOME", (".local", "share")),
)


def _isolate(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    monkeypatch.setenv("HOME", str(home))
    for name, parts in _FOLDERS:
        monkeypatch.setenv(name, str(home.joinpath(*parts)))
    monkeypatch.setenv("NPM_CONFIG_CACHE", _NPM_CACHE)


@pytest.fixture(scope="session", autouse=True)
def _isolated_run_folders(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A HOME and XDG base folders for the whole run, set before any fixture runs: a module- or session-scoped
    fixture (one that records a transcript with the CLI, or starts an agent for a module's tests) runs before the
    per-test folders below exist, and would otherwise read and write the user's real ones."""
    home = tmp_path_factory.mktemp("run-home")
    with pytest.MonkeyPatch.context() as monkeypatch:
        _isolate(monkeypatch, home)
        yield home


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(autouse=True)
def _isolated_user_folders(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh HOME and XDG base folders for every test, so nothing reads or writes the user's real state."""
    home = tmp_path_factory.mktemp("home")
    _isolate(monkeypatch, home)
    yield home
