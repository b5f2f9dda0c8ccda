"""``ServerOptions`` and the token file, checked before anything listens: a non-loopback address needs a token, a
token must be sendable in a header and is never shown, a token file must be its owner's alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from acp_session.server import (
    BearerToken,
    ServerConfigError,
    ServerLimits,
    ServerOptions,
    generate_token,
    parse_address,
    read_token_file,
)
from acp_session.server.auth import MAX_TOKEN_FILE_BYTES

TOKEN = "k3ep-Th1s-0ut-of-the-logs"


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "example.com"])
def test_beyond_loopback_needs_a_token(host: str) -> None:
    with pytest.raises(ServerConfigError, match=f"listening on {host}, beyond loopback, needs a token"):
        ServerOptions(host=host)
    assert ServerOptions(host=host, token=TOKEN).token == TOKEN


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost", "LOCALHOST"])
def test_loopback_needs_no_token(host: str) -> None:
    assert ServerOptions(host=host).token is None


def test_the_token_is_never_shown() -> None:
    options = ServerOptions(token=TOKEN)
    assert TOKEN not in repr(options) and TOKEN not in str(options)
    assert TOKEN not in repr(BearerToken(TOKEN))
    with pytest.raises(ServerConfigError) as bad:
        ServerOptions(token="two words")
    assert "two words" not in str(bad.value)


@pytest.mark.parametrize("token", ["", "two words", "line\n", "caf\u00e9"])
def test_a_token_a_header_cannot_carry_is_refused(token: str) -> None:
    with pytest.raises(ServerConfigError, match="token"):
        ServerOptions(token=token)


def test_the_rest_is_checked_too() -> None:
    with pytest.raises(ServerConfigError, match="--tls-cert and --tls-key go together"):
        ServerOptions(tls_cert="cert.pem")
    with pytest.raises(ServerConfigError, match="--allow-origin wants an origin"):
        ServerOptions(allow_origins=("app.example",))
    with pytest.raises(ServerConfigError, match="port"):
        ServerOptions(port=70000)
    with pytest.raises(ServerConfigError, match="limits must be positive"):
        ServerLimits(max_connections=0)
    assert ServerOptions() == ServerOptions()
    with pytest.raises(ServerConfigError, match="--listen wants HOST:PORT"):
        parse_address("nowhere")
    assert parse_address("[::1]:8080") == ("::1", 8080)
    assert len(generate_token()) >= 43 and generate_token() != generate_token()


def test_the_bearer_check_wants_exactly_one_bearer_with_the_token() -> None:
    token = BearerToken(TOKEN)
    assert token.allows([f"Bearer {TOKEN}".encode()]) and token.allows([f"bearer  {TOKEN} ".encode()])
    for refused in ([], [b"Bearer"], [b"Bearer wrong"], [f"Basic {TOKEN}".encode()], [f"Bearer {TOKEN}x".encode()]):
        assert not token.allows(refused), refused
    assert not token.allows([f"Bearer {TOKEN}".encode()] * 2)


def _token_file(tmp_path: Path, text: str, mode: int) -> Path:
    path = tmp_path / "token"
    path.write_text(text)
    path.chmod(mode)
    return path


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_a_token_file_is_read_only_when_its_owners_alone(tmp_path: Path) -> None:
    path = _token_file(tmp_path, f"  {TOKEN}\n", 0o600)
    assert read_token_file(path) == TOKEN
    assert read_token_file(str(path)) == TOKEN
    path.chmod(0o400)
    assert read_token_file(path) == TOKEN
    for mode in (0o644, 0o640, 0o604, 0o620, 0o660):
        path.chmod(mode)
        with pytest.raises(ServerConfigError) as refused:
            read_token_file(path)
        assert f"chmod 600 {path}" in str(refused.value) and f"{mode:04o}" in str(refused.value)
        assert TOKEN not in str(refused.value)


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_a_token_file_that_holds_no_token_is_refused(tmp_path: Path) -> None:
    cases = {
        "empty": ("\n", "the token is empty"),
        "spaces": ("two words\n", "visible ASCII"),
        "large": ("x" * (MAX_TOKEN_FILE_BYTES + 1), "larger than"),
        "binary": ("caf\u00e9", "not ASCII"),
    }
    for name, (text, reason) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        path.chmod(0o600)
        with pytest.raises(ServerConfigError, match=reason):
            read_token_file(path)
    with pytest.raises(ServerConfigError, match="cannot read the token file"):
        read_token_file(tmp_path / "missing")
    tmp_path.joinpath("dir").mkdir(mode=0o700)
    with pytest.raises(ServerConfigError, match="not a regular file"):
        read_token_file(tmp_path / "dir")


def test_importing_the_server_loads_no_http_library() -> None:
    """hypercorn (the ``serve`` extra) is imported when a server starts, not with the package."""
    libraries = "{'hypercorn', 'h2', 'h11', 'wsproto', 'httpx'}"
    code = f"import sys, acp_session.server; print(sorted(m for m in sys.modules if m.split('.')[0] in {libraries}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
