"""``compare`` and the symbolic links of the directory compared (issue 51, 14): a copy keeps links as links, so a
link leading outside the directory led from the agent's copy into the user's real files, and the diffstat skipped
links. Now such a link leads nowhere outside the copy (replaced by a copy of its target, re-pointed into the copy,
left out when it leads nowhere, or the run refused with a line naming it), and a write through any link is
reported. The agent writes by itself, following links as any program does (``agents/writing_agent.py``)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli.support import run_cli
from tests.cli.test_compare import git

WRITER = shlex.join([sys.executable, str(Path(__file__).parent / "agents" / "writing_agent.py")])


def compare(cwd: Path, prompt: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(cwd, "compare", "--cwd", str(cwd), "--agent", WRITER, "--agent", WRITER, *args, prompt, timeout=120)


def files_of(done: subprocess.CompletedProcess[str]) -> list[list[tuple[str, str]]]:
    assert done.returncode == 0, done.stderr
    record: dict[str, Any] = json.loads(done.stdout)
    for run in record["agents"]:
        assert run["stop_reason"] == "end_turn", run
    return [[(f["path"], f["status"]) for f in run["files"]] for run in record["agents"]]


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """The user's real files, outside the directory compared."""
    folder = tmp_path / "victim"
    folder.mkdir()
    (folder / "data.txt").write_text("the user's own data\n")
    return folder


def user_folder(tmp_path: Path) -> Path:
    user = tmp_path / "project"
    user.mkdir()
    (user / "README.md").write_text("# project\n")
    return user


def test_a_write_through_a_link_to_a_folder_outside_stays_in_the_copy(tmp_path: Path, victim: Path) -> None:
    user = user_folder(tmp_path)
    (user / "link").symlink_to(victim)  # an absolute link, as the issue tried it
    done = compare(user, "link/data.txt written by the agent", "--json")
    assert files_of(done) == [[("link/data.txt", "modified")]] * 2
    assert (victim / "data.txt").read_text() == "the user's own data\n"
    assert (user / "link").is_symlink() and os.readlink(user / "link") == str(victim)


def test_a_link_to_a_file_outside_and_one_into_the_directory(tmp_path: Path, victim: Path) -> None:
    user = user_folder(tmp_path)
    (user / "settings").symlink_to(victim / "data.txt")
    (user / "docs").mkdir()
    (user / "docs" / "readme").symlink_to(user / "README.md")  # absolute, into the user's own directory
    (user / "docs" / "up").symlink_to("../README.md")  # relative, inside: a write through it changes README.md
    done = compare(user, "settings changed\ndocs/readme changed", "--json")
    assert files_of(done) == [[("README.md", "modified"), ("settings", "modified")]] * 2
    assert (victim / "data.txt").read_text() == "the user's own data\n"
    assert (user / "README.md").read_text() == "# project\n"
    relative = compare(user, "docs/up through the relative link", "--json")
    assert files_of(relative) == [[("README.md", "modified")]] * 2
    assert (user / "README.md").read_text() == "# project\n"


def test_a_git_worktree_checks_links_out_as_links_and_they_are_replaced_too(tmp_path: Path, victim: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "link").symlink_to(victim)
    git(repo, "add", "link")
    git(repo, "commit", "-qm", "a link")
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("more of the user's data\n")
    (repo / "untracked").symlink_to(elsewhere)  # copied over with the uncommitted work
    done = compare(repo, "link/data.txt one\nuntracked two", "--json")
    assert files_of(done) == [[("link/data.txt", "modified"), ("untracked", "modified")]] * 2
    assert (victim / "data.txt").read_text() == "the user's own data\n"
    assert elsewhere.read_text() == "more of the user's data\n"
    assert git(repo, "status", "--porcelain") == "?? untracked\n"


def test_a_link_outside_to_nothing_is_left_out_with_a_notice(tmp_path: Path, victim: Path) -> None:
    user = user_folder(tmp_path)
    (user / "ghost").symlink_to(victim / "not-yet.txt")
    done = compare(user, "ghost created", "--json")
    assert files_of(done) == [[("ghost", "added")]] * 2  # a file of the copy's own, not the link's target
    assert not (victim / "not-yet.txt").exists()
    notices = [line for line in done.stderr.splitlines() if "ghost" in line]
    assert len(notices) == 1 and "does not exist" in notices[0], done.stderr


@pytest.mark.parametrize("kind", ["pipe", "too big"])
def test_a_link_compare_cannot_copy_refuses_the_run_naming_it(tmp_path: Path, victim: Path, kind: str) -> None:
    user = user_folder(tmp_path)
    if kind == "pipe":
        os.mkfifo(victim / "pipe")
        (user / "special").symlink_to(victim / "pipe")
        expected = "not a file or a directory"
    else:
        (user / "special").symlink_to("/usr")  # far more than 10 000 files
        expected = "too much to copy"
    done = compare(user, "special/x written", "--json")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "special" in lines[0] and expected in lines[0], done.stderr
    assert done.stdout == ""
    assert sorted(p.name for p in victim.iterdir()) == sorted(["data.txt", *(["pipe"] if kind == "pipe" else [])])


def test_two_links_to_one_file_outside_share_its_copy(tmp_path: Path, victim: Path) -> None:
    user = user_folder(tmp_path)
    (user / "a").symlink_to(victim)
    (user / "b").symlink_to(victim / "data.txt")  # the same file, through the copy of the folder
    done = compare(user, "b written through b", "--json", "--keep")
    assert files_of(done) == [[("a/data.txt", "modified")]] * 2
    for run in json.loads(done.stdout)["agents"]:
        copy = Path(run["workdir"])
        assert (copy / "a" / "data.txt").read_text() == "written through b\n"
        assert os.readlink(copy / "b") == "a/data.txt"
    shutil.rmtree(copy.parent)  # --keep: the copies are ours to remove
    assert (victim / "data.txt").read_text() == "the user's own data\n"


def test_links_the_agent_changes_are_reported(tmp_path: Path) -> None:
    """The diffstat counts links: one removed, and one made a file, show up as changes."""
    user = user_folder(tmp_path)
    (user / "notes").symlink_to("README.md")
    (user / "docs").symlink_to(".")
    done = compare(user, "-notes\n-docs\ndocs a file now", "--json")
    assert files_of(done) == [[("docs", "modified"), ("notes", "deleted")]] * 2
    assert (user / "notes").is_symlink() and (user / "docs").is_symlink()
