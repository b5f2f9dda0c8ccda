"""Tests never touch the user's own folders (issue 38): every test gets a fresh HOME and XDG_* folders (and the
run's fixtures of wider scope one of their own), and the whole run is checked at its end against a snapshot of the
real ``acp-session`` folders (tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REAL_FOLDERS, REAL_HOME, changed_files, files_naming, snapshot_acp_session_folders


def test_every_test_has_its_own_home_and_xdg_folders(tmp_path: Path) -> None:
    home = os.environ["HOME"]
    assert os.path.realpath(home) != os.path.realpath(REAL_HOME)
    for name, real in REAL_FOLDERS.items():
        assert os.environ[name].startswith(home), name
        assert os.path.realpath(os.environ[name]) != os.path.realpath(real), name


def test_a_cli_run_writes_its_state_into_the_test_home_only(tmp_path: Path) -> None:
    """``acp-session chat`` (the default agent keeps its sessions under the state folder) writes into the test's
    HOME, and the real folders' snapshot is unchanged by it."""
    before = snapshot_acp_session_folders()
    done = subprocess.run(
        [sys.executable, "-m", "acp_session", "chat", "hello"],
        capture_output=True,
        cwd=tmp_path,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()
    state = Path(os.environ["XDG_STATE_HOME"]) / "acp-session"
    assert (state / "recent-sessions.json").is_file()
    assert (state / "reference-agent-sessions.json").is_file()
    # (Another program on a shared machine may change the real folders meanwhile: only a file naming this test's
    # directory, where its session ran, is this run's doing.)
    assert files_naming(changed_files(before, snapshot_acp_session_folders()), [str(tmp_path)]) == []


def test_the_snapshot_sees_a_file_added_changed_or_removed(tmp_path: Path) -> None:
    """The end-of-run check can fail: a new, a rewritten and a deleted file under ``acp-session`` all count."""
    folders = {"XDG_STATE_HOME": str(tmp_path)}
    root = tmp_path / "acp-session"
    root.mkdir()
    (root / "kept").write_text("a")
    (root / "changed").write_text("a")
    (root / "removed").write_text("a")
    before = snapshot_acp_session_folders(folders)
    (root / "changed").write_text("ab")
    (root / "removed").unlink()
    (root / "added").write_text("a")
    assert changed_files(before, snapshot_acp_session_folders(folders)) == [
        str(root / "added"),
        str(root / "changed"),
        str(root / "removed"),
    ]


def test_a_change_is_blamed_on_the_run_only_when_it_names_the_runs_folders(tmp_path: Path) -> None:
    ours = tmp_path / "ours.json"
    ours.write_text(f'[{{"cwd": "{tmp_path}/project"}}]')
    theirs = tmp_path / "theirs.json"
    theirs.write_text('[{"cwd": "/home/someone/work"}]')
    paths = [str(ours), str(theirs), str(tmp_path / "removed.json")]
    assert files_naming(paths, [str(tmp_path)]) == [str(ours)]


@pytest.fixture(scope="module")
def module_home() -> str:
    """What a module-scoped fixture (one that records with the CLI, or starts an agent) sees as HOME: it runs
    before the per-test folders are set."""
    return os.environ["HOME"]


def test_a_module_fixture_has_isolated_folders_too(module_home: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    assert os.path.realpath(module_home) != os.path.realpath(REAL_HOME)
    assert os.path.realpath(module_home).startswith(os.path.realpath(tmp_path_factory.getbasetemp()))
