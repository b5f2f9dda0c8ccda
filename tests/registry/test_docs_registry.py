"""docs/registry.md stays true: its example runs (resolving from the bundled snapshot, then one turn with an
agent id resolved through a local registry whose binary archive is served from 127.0.0.1)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session.registry import ALIASES, RegistryLimits, bundled_registry, current_platform
from tests.registry.support import agent_tar, binary_entry, serve, sha256, write_registry
from tests.schema_source import REPO

DOC = (REPO / "docs" / "registry.md").read_text()
EXAMPLE = re.search(r"```python\n# example: registry\n(.*?)```", DOC, re.DOTALL)
LIMITS = re.search(r"```python\n# example: limits\n(.*?)```", DOC, re.DOTALL)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_registry_example_runs(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert EXAMPLE is not None
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    namespace: dict[str, Any] = {"__name__": "registry_doc_example"}
    exec(compile(EXAMPLE.group(1), "docs/registry.md", "exec"), namespace)
    assert capsys.readouterr().out == "codex-acp npx ['npx', '--yes']\n"
    archive = agent_tar()
    with serve(tmp_path / "www") as www:
        entry = binary_entry("local-agent", current_platform(), www.put("a.tar.gz", archive), sha256(archive))
        monkeypatch.setenv("ACP_SESSION_REGISTRY", str(write_registry(tmp_path / "registry.json", entry)))
        text = anyio.run(namespace["first_turn"], "local-agent", str(tmp_path), backend=backend)
    assert text


def test_the_limits_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert LIMITS is not None
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    namespace: dict[str, Any] = {"__name__": "registry_limits_example"}
    exec(compile(LIMITS.group(1), "docs/registry.md", "exec"), namespace)
    archive = agent_tar()
    with serve(tmp_path / "www") as www:
        entry = binary_entry("local-agent", current_platform(), www.put("a.tar.gz", archive), sha256(archive))
        monkeypatch.setenv("ACP_SESSION_REGISTRY", str(write_registry(tmp_path / "registry.json", entry)))
        namespace["small"] = RegistryLimits(download_bytes=len(archive) - 1)  # one byte short of this archive
        with pytest.raises(SystemExit, match=f"local-agent: its archive is over {len(archive) - 1} bytes"):
            namespace["command_of"]("local-agent")
        namespace["small"] = RegistryLimits(download_bytes=len(archive))
        assert namespace["command_of"]("local-agent")[0].endswith("pkg/bin/agent")
    assert list(RegistryLimits.__dataclass_fields__) == re.findall(r"^\| `(\w+)` \| [0-9]", DOC, re.MULTILINE)


def test_the_alias_table_is_the_code_s() -> None:
    rows = dict(re.findall(r"^\| `(\w+)` \| `([a-z0-9-]+)`", DOC, re.MULTILINE))
    assert rows == ALIASES
    snapshot = bundled_registry().snapshot
    assert snapshot is not None and f"bundled snapshot of {snapshot.date}" in DOC
