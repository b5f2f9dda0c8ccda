"""``acp-session chat|sessions --url URL [--header ...]`` against the TS SDK's server and our reference agent's
``--listen``, over both profiles."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.cli.support import CLI, cli_env, run_cli
from tests.remote_server.conftest import start_server, tls_files

from .conftest import TsServer

__all__ = ["start_server"]  # the --listen fixture, used by name


@pytest.mark.parametrize("scheme", ["http", "ws"])
def test_chat_with_a_remote_agent(ts_server: TsServer, scheme: str, tmp_path: Path) -> None:
    url = ts_server.url if scheme == "http" else ts_server.ws_url
    done = run_cli(tmp_path, "chat", "--url", url, "--header", "Authorization: Bearer cli-token-42", "hi")
    assert done.returncode == 0, done.stderr
    assert "You said: hi" in done.stdout
    assert {r["authorization"] for r in ts_server.requests()} == {"Bearer cli-token-42"}
    again = run_cli(tmp_path, "chat", "--url", url, "--json", "once more")
    assert again.returncode == 0, again.stderr
    events = [json.loads(line) for line in again.stdout.splitlines()]
    assert events[-1]["event"] == "done" and events[-1]["stop_reason"] == "end_turn"


@pytest.mark.parametrize("scheme", ["http", "ws"])
def test_chat_with_the_reference_agent_listening(start_server: Any, scheme: str, tmp_path: Path) -> None:
    """The other server: ``acp-reference-agent --listen`` (its cookie required), a turn rendered as text and a
    plan turn as ``--json`` records."""
    server = start_server("--require-cookie")
    url = server.url if scheme == "http" else "ws" + server.url.removeprefix("http")
    done = run_cli(tmp_path, "chat", "--url", url, "hello")
    assert done.returncode == 0, done.stderr
    assert "[stop: end_turn]" in done.stdout and "hello" in done.stdout.lower()
    plan = run_cli(tmp_path, "chat", "--url", url, "--json", "/plan")
    assert plan.returncode == 0, plan.stderr
    records = [json.loads(line) for line in plan.stdout.splitlines()]
    assert records[-1]["event"] == "done" and records[-1]["stop_reason"] == "end_turn"


@pytest.mark.parametrize("scheme", ["https", "wss"])
def test_chat_over_tls_trusts_the_ca_it_is_given(start_server: Any, scheme: str, tmp_path: Path) -> None:
    """``--ca-file`` (or ``$SSL_CERT_FILE``) trusts a private CA; without it the certificate is refused in words
    that say what to do, and no traceback."""
    if not os.path.exists(CLI):
        pytest.skip("the acp-session console script is not installed (pip install -e .)")
    ca, cert, key = tls_files(tmp_path)
    server = start_server("--tls-cert", cert, "--tls-key", key)
    url = scheme + server.url.removeprefix("https")
    env = {k: v for k, v in cli_env(tmp_path).items() if k != "SSL_CERT_FILE"}

    def chat(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CLI, "chat", "--url", url, *args, "hello"],
            capture_output=True,
            text=True,
            env={**env, **extra},
            timeout=60,
            cwd=tmp_path,
        )

    trusted = chat("--ca-file", ca)
    assert trusted.returncode == 0, trusted.stderr
    assert "[stop: end_turn]" in trusted.stdout
    assert chat(SSL_CERT_FILE=ca).returncode == 0
    assert chat("--insecure").returncode == 0
    refused = chat()
    assert refused.returncode == 1 and "CERTIFICATE_VERIFY_FAILED" in refused.stderr
    assert "its certificate is not trusted: --ca-file PATH trusts its CA" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_an_unreachable_url_is_a_plain_error(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "chat", "--url", "http://user:cli-secret@127.0.0.1:1/acp", "hi")
    assert done.returncode == 1
    assert "could not talk to the agent at http://[redacted]@127.0.0.1:1/acp" in done.stderr
    assert "cli-secret" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--url", "ftp://host/acp"], "http(s):// or ws(s)://"),
        (["--url", "http://h/acp", "--agent", "x"], "--url and --agent do not go together"),
        (["--url", "http://h/acp", "--header", "no colon"], "Name: value"),
        (["--url", "http://h/acp", "--header", "Acp-Session-Id: x"], "set by the transport"),
        (["--header", "A: b"], "--header, --insecure and --ca-file go with --url"),
        (["--ca-file", "ca.pem"], "--header, --insecure and --ca-file go with --url"),
        (["--url", "https://h/acp", "--ca-file", "ca.pem", "--insecure"], "--ca-file and --insecure do not go"),
        (["--url", "https://h/acp", "--ca-file", "/no/such/ca.pem"], "the CA file '/no/such/ca.pem' does not exist"),
    ],
)
def test_usage_errors(args: list[str], message: str, tmp_path: Path) -> None:
    done = run_cli(tmp_path, "chat", *args, "hi")
    assert done.returncode == 2
    assert message in done.stderr
