"""Where the tests find the official ACP v2 JSON schema (it is not committed to this repository).

Looked up in order: ``$ACP_SCHEMA_DIR``; the workspace copy in ``../shared/spec/schema/v2``; the
copy shipped in the npm package ``@agentclientprotocol/sdk`` (``.cache/acp-schema`` as unpacked by
``.ci/run``, or ``tests/interop/node_modules``). In CI a missing schema is a failure with a clear
message; on a developer machine without any copy the tests that need it skip with that reason.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
NPM_HINT = "npm pack @agentclientprotocol/sdk@2.4.0 && tar xzf agentclientprotocol-sdk-2.4.0.tgz"


def candidate_dirs() -> list[Path]:
    env = os.environ.get("ACP_SCHEMA_DIR")
    dirs = [Path(env)] if env else []
    dirs += [
        REPO.parent / "shared" / "spec" / "schema" / "v2",
        REPO / ".cache" / "acp-schema" / "package" / "schema" / "v2",
        REPO / "tests" / "interop" / "node_modules" / "@agentclientprotocol" / "sdk" / "schema" / "v2",
    ]
    return dirs


def find_schema_dir() -> Path | None:
    for directory in candidate_dirs():
        if (directory / "schema.json").is_file():
            return directory
    return None


def require_schema_dir() -> Path:
    """The schema folder, or fail (CI) / skip (elsewhere) naming every place that was tried."""
    found = find_schema_dir()
    if found is not None:
        return found
    tried = ", ".join(str(d) for d in candidate_dirs())
    message = f"official ACP v2 schema not found (tried {tried}); get it with: {NPM_HINT}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)
