"""``acp-session compare`` (issue 38): one prompt to two reference-agent variants and the TS SDK agent at once,
each in its own copy of the directory; per-agent columns, a correct diffstat, and the user's directory (a plain
folder, or a git repository with uncommitted work) left exactly as it was."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.cli.support import run_cli
from tests.cli.test_json_records import VALIDATOR
from tests.interop.conftest import TS_AGENT, node  # noqa: F401 (the node fixture)

REFERENCE = shlex.join([sys.executable, "-m", "acp_conformance.agent"])
SLOWER = shlex.join([sys.executable, "-m", "acp_conformance.agent", "--delay", "0.01"])
EDITED = [
    {"path": "acp-reference-edit/greeting.txt", "status": "added", "added": 1, "removed": 0, "binary": False},
    {"path": "acp-reference-edit/notes.md", "status": "added", "added": 3, "removed": 0, "binary": False},
]


def walk(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` (``.git`` included): size and mtime, so a rewrite with the same text counts."""
    found = {}
    for path in root.rglob("*"):
        if path.is_file():
            info = path.stat()
            found[str(path.relative_to(root))] = (info.st_size, info.st_mtime_ns)
    return found


def compare(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(cwd, "compare", "--cwd", str(cwd), *args, timeout=120)


def test_three_agents_side_by_side_in_json(tmp_path: Path, node: str) -> None:  # noqa: F811
    user = tmp_path / "project"
    user.mkdir()
    (user / "README.md").write_text("# project\n")
    before = walk(user)
    ts = shlex.join([node, str(TS_AGENT)])
    done = compare(user, "--json", "--agent", REFERENCE, "--agent", SLOWER, "--agent", ts, "/edit")
    assert done.returncode == 0, done.stderr
    record: dict[str, Any] = json.loads(done.stdout)
    assert not list(VALIDATOR.iter_errors(record))
    first, second, third = record["agents"]
    assert [a["agent"] for a in record["agents"]] == [REFERENCE, SLOWER, ts]
    assert len({a["label"] for a in record["agents"]}) == 3
    for run in (first, second):
        assert run["stop_reason"] == "end_turn" and run["files"] == EDITED
        assert run["reply"].startswith("I edited greeting.txt and notes.md")
        assert [(c["kind"], c["status"]) for c in run["tool_calls"]] == [("edit", "completed"), ("edit", "failed")]
        assert run["copy"] == "copy" and not run["workdir"].startswith(str(user))
    assert third["stop_reason"] == "end_turn" and third["files"] == [] and third["tool_calls"] == []
    assert third["reply"] == "You said: /edit"
    assert walk(user) == before  # nothing written in the user's directory
    assert not Path(first["workdir"]).exists()  # the copies are gone


def test_the_table_has_one_column_per_agent(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("x\n")
    done = compare(tmp_path, "--agent", REFERENCE, "--agent", SLOWER, "/edit")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[0] == "agent" and lines[0].count("python") == 2
    assert lines[5].split() == ["files", "changed", "2", "(+4", "-0)", "2", "(+4", "-0)"]
    assert "  acp-reference-edit/notes.md | added +3 -0" in lines
    assert not (tmp_path / "acp-reference-edit").exists()


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_a_git_repository_gets_a_worktree_with_the_uncommitted_work(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "example.txt").write_text("old\nsecond\n")
    git(repo, "add", "example.txt")
    git(repo, "commit", "-qm", "one")
    (repo / "example.txt").write_text("new\nsecond\n")  # uncommitted
    (repo / "untracked.txt").write_text("mine\n")
    status, before = git(repo, "status", "--porcelain"), walk(repo)
    done = compare(repo, "--json", "--keep", "--agent", REFERENCE, "--agent", SLOWER, "/tool")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    for run in record["agents"]:
        assert run["copy"] == "git worktree"
        assert run["files"] == [
            {"path": "example.txt", "status": "modified", "added": 1, "removed": 1, "binary": False}
        ]
        copy = Path(run["workdir"])
        assert (copy / "example.txt").read_text() == "old\nsecond\n"  # /tool flipped the uncommitted "new"
        assert (copy / "untracked.txt").read_text() == "mine\n"
    assert (repo / "example.txt").read_text() == "new\nsecond\n"
    for run in record["agents"]:  # --keep: still registered worktrees; removed here
        git(repo, "worktree", "remove", "--force", run["workdir"])
    done = compare(repo, "--agent", REFERENCE, "--agent", SLOWER, "/tool")
    assert done.returncode == 0, done.stderr
    assert git(repo, "status", "--porcelain") == status
    assert len(git(repo, "worktree", "list").splitlines()) == 1  # no worktree left behind
    after = walk(repo)
    user_files = {k: v for k, v in after.items() if not k.startswith(".git")}
    assert user_files == {k: v for k, v in before.items() if not k.startswith(".git")}


def test_nobody_is_asked_the_policy_answers_for_every_agent(tmp_path: Path) -> None:
    refused = json.loads(compare(tmp_path, "--json", "--agent", REFERENCE, "--agent", SLOWER, "/edit ask").stdout)
    for run in refused["agents"]:  # no policy: refused
        assert run["files"] == [] and run["permissions"] == [
            {
                "title": "Edit greeting.txt and notes.md?",
                "answer": "reject-once",
                "decision": "deny",
                "policy": "--deny-all, the default",
            }
        ]
    allowed = json.loads(
        compare(tmp_path, "--json", "--approve-all", "--agent", REFERENCE, "--agent", SLOWER, "/edit ask").stdout
    )
    assert [run["files"] for run in allowed["agents"]] == [EDITED, EDITED]
    assert [run["permissions"][0]["answer"] for run in allowed["agents"]] == ["allow-once", "allow-once"]
    assert [run["permissions"][0]["policy"] for run in allowed["agents"]] == ["--approve-all", "--approve-all"]


def test_the_table_says_what_the_default_policy_refused(tmp_path: Path) -> None:
    """Not only --json: the table counts the requests each agent made and what became of them, a note says
    that the default refused them and how to allow them, and each agent's section lists them."""
    done = compare(tmp_path, "--agent", REFERENCE, "--agent", SLOWER, "/edit ask")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[6].split() == ["permissions", "1", "refused", "1", "refused"]
    assert any("without a policy every permission request is refused" in line for line in lines)
    assert lines.count("  [permission] Edit greeting.txt and notes.md?: refused (--deny-all, the default)") == 2
    done = compare(tmp_path, "--approve-all", "--agent", REFERENCE, "--agent", SLOWER, "/edit ask")
    lines = done.stdout.splitlines()
    assert lines[6].split() == ["permissions", "1", "allowed", "1", "allowed"]
    assert not any("without a policy" in line for line in lines)
    assert "  [permission] Edit greeting.txt and notes.md?: allowed (--approve-all)" in lines


def test_compare_needs_two_agents_and_a_prompt(tmp_path: Path) -> None:
    done = compare(tmp_path, "--agent", REFERENCE, "hi")
    assert done.returncode == 2 and "compare needs two or more --agent" in done.stderr
    done = compare(tmp_path, "--agent", REFERENCE, "--agent", "no-such-agent-x", "hi")
    assert done.returncode == 1 and "agent command not found: no-such-agent-x" in done.stderr
