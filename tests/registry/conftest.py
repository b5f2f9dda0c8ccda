"""Fixtures shared by the registry tests: a per-test agent cache, and stand-ins for npx and uvx."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def registry_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's own per-user cache (``XDG_CACHE_HOME``), and no registry from the environment."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("ACP_SESSION_REGISTRY", raising=False)
    return tmp_path / "cache"


@pytest.fixture
def launchers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stand-ins for npx and uvx on PATH: resolving only checks that they are there, it does not run them."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("npx", "uvx"):
        (bin_dir / tool).write_text("#!/bin/sh\n")
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
