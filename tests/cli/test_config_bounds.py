"""A hostile ``config.toml`` (issue 51, 13): nesting 100 000 deep, a dotted key of 12 000 parts, ``nan`` and
``inf`` where seconds go, a file of megabytes. Each is one line on stderr naming the file (exit code 2), from
``chat`` and from ``config show``, with no traceback, and the dotted key costs no memory (it is counted before
``tomllib`` reads the file)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli.support import run_cli, run_cli_measured

CASES = {
    "arrays nested 100 000 deep": ("x = " + "[" * 100_000 + "]" * 100_000 + "\n", "nested deeper than 32 levels"),
    "inline tables nested 100 000 deep": (
        "[defaults]\nset = " + "{a=" * 100_000 + "1" + "}" * 100_000 + "\n",
        "nested deeper than 32 levels",
    ),
    "a 12 000-part dotted key": ("[defaults]\n" + ".".join(["k"] * 12_000) + " = 1\n", "more than 32 parts"),
    "a 12 000-part table name": ("[" + ".".join(["k"] * 12_000) + "]\n", "more than 32 parts"),
    "timeout = nan": ("[defaults]\ntimeout = nan\n", "timeout: nan is not a finite number"),
    "init_timeout = inf": ("[defaults]\ninit_timeout = inf\n", "init_timeout: inf is not a finite number"),
    "a nan deep in a profile": (
        '[agents.a]\ncommand = "x"\nset = { k = [1.0, -nan] }\n',
        "agents.a.set.k.1: nan is not a finite number",
    ),
    "a negative timeout": ("[defaults]\ntimeout = -1\n", "timeout: expected a positive number of seconds"),
    "2 MiB of comment": ("#" + "x" * (2 << 20) + "\n", "larger than 1048576 bytes"),
    "escapes in a profile's name": ('[agents."a\\u001b[2J\\nb"]\nmodel = "m"\n', "needs exactly one of command"),
}


def write_config(text: str) -> Path:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "acp-session" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def one_line(stderr: str, path: Path, message: str) -> None:
    assert "Traceback" not in stderr, stderr[-2000:]
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and message in lines[0], stderr[-2000:]
    assert len(lines[0]) < 400 and "\x1b" not in lines[0]


@pytest.mark.parametrize("case", list(CASES))
def test_a_hostile_config_file_is_one_line(tmp_path: Path, case: str) -> None:
    text, message = CASES[case]
    path = write_config(text)
    done = run_cli(tmp_path, "chat", "hello")
    assert done.returncode == 2
    one_line(done.stderr, path, message)
    shown = run_cli(tmp_path, "config", "show")
    assert shown.returncode == 2
    one_line(shown.stderr, path, message)


def test_a_long_dotted_key_costs_no_memory(tmp_path: Path) -> None:
    """12 000 parts cost tomllib 860 MiB; refused before it reads them, the CLI stays at its usual size."""
    path = write_config("[defaults]\n" + ".".join(["k"] * 12_000) + " = 1\n")
    done, peak = run_cli_measured(tmp_path, "config", "show")
    assert peak < 150 * 2**20, f"peak RSS {peak / 2**20:.0f} MiB"
    assert done.returncode == 2
    one_line(done.stderr, path, "more than 32 parts")


def test_strings_may_hold_brackets_and_dots(tmp_path: Path) -> None:
    """What the count skips: brackets and dots inside every kind of string and in comments."""
    many = "[" * 40 + "." * 40
    path = write_config(
        "[defaults]\n"
        f'system_prompt = """{many} \\""" ends here"""  # {many}\n'
        f"model = '{many}'\n"
        f'mode = "{many}\\" still in it"\n'
        f"registry = '''{many}''''\n"
        "timeout = 1.5\n"
    )
    shown = run_cli(tmp_path, "config", "show", "--json")
    assert shown.returncode == 0, shown.stderr
    assert '"timeout": {"value": 1.5' in shown.stdout and str(path) in shown.stdout
