"""``--record FILE`` (issue 51, 4): a transcript holds prompts and file contents, so it is never written through a
symbolic link (a planted ``session.jsonl -> ~/.bashrc``) and never added silently to an existing file: that needs
``--append``. Each case runs the real CLI against the reference agent."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from tests.cli.support import run_cli

BASHRC = "export PATH=$HOME/bin:$PATH\n"


def usage_error(done: subprocess.CompletedProcess[str], *words: str) -> None:
    """Exit code 2 and one line on stderr holding ``words``."""
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr
    assert all(word in done.stderr for word in words), done.stderr


@pytest.mark.parametrize("append", [False, True])
def test_record_onto_a_symbolic_link_is_refused(tmp_path: Path, append: bool) -> None:
    victim = tmp_path / "bashrc"
    victim.write_text(BASHRC)
    link = tmp_path / "session.jsonl"
    link.symlink_to(victim)
    done = run_cli(tmp_path, "chat", "--record", str(link), *(["--append"] if append else []), "hello")
    usage_error(done, "--record", "symbolic link", str(victim))
    assert victim.read_text() == BASHRC and link.is_symlink()


def test_a_dangling_symbolic_link_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "new-file"
    target.parent.mkdir()
    link = tmp_path / "session.jsonl"
    link.symlink_to(target)
    usage_error(run_cli(tmp_path, "chat", "--record", str(link), "--append", "hello"), "symbolic link")
    assert not target.exists()


def test_an_existing_transcript_is_refused_without_append(tmp_path: Path) -> None:
    transcript = tmp_path / "session.jsonl"
    first = run_cli(tmp_path, "chat", "--record", str(transcript), "first words")
    assert first.returncode == 0, first.stderr
    recorded = transcript.read_bytes()
    assert b"first words" in recorded
    assert stat.S_IMODE(transcript.stat().st_mode) == 0o600  # prompts and file contents: the user's alone

    again = run_cli(tmp_path, "chat", "--record", str(transcript), "-c", "second words")
    usage_error(again, "already exists", "--append")
    assert transcript.read_bytes() == recorded

    appended = run_cli(tmp_path, "chat", "--record", str(transcript), "--append", "-c", "second words")
    assert appended.returncode == 0, appended.stderr
    data = transcript.read_bytes()
    assert data.startswith(recorded) and b"second words" in data[len(recorded) :]
    prompts = [json.loads(line)["msg"] for line in data.splitlines()]
    assert sum(1 for m in prompts if m.get("method") == "session/prompt") == 2


def test_append_alone_and_a_directory_are_usage_errors(tmp_path: Path) -> None:
    usage_error(run_cli(tmp_path, "chat", "--append", "hello"), "--append", "--record")
    usage_error(run_cli(tmp_path, "chat", "--record", str(tmp_path), "--append", "hello"), "is a directory")


def test_a_link_swapped_in_after_the_check_is_not_followed(tmp_path: Path) -> None:
    """The file is opened without following links, so a link planted between the check and the open fails."""
    from acp_session.cli.record_file import open_record

    victim = tmp_path / "bashrc"
    victim.write_text(BASHRC)
    link = tmp_path / "session.jsonl"
    link.symlink_to(victim)
    for append, code in ((True, errno.ELOOP), (False, errno.EEXIST)):
        with pytest.raises(OSError) as caught:
            open_record(str(link), append)
        assert caught.value.errno == code
    assert victim.read_text() == BASHRC
    with open_record(str(tmp_path / "new.jsonl"), append=False) as file:
        file.write(b"x\n")
    assert os.stat(tmp_path / "new.jsonl").st_size == 2
