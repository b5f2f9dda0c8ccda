"""Where the tests find the official ACP JSON schemas, v2 and v1 (they are not committed to this repository).

Looked up in order, for protocol version N: the environment variable (``$ACP_SCHEMA_DIR`` for v2,
``$ACP_V1_SCHEMA_DIR`` for v1); the workspace copy in ``../shared/spec/schema/vN``; the copy shipped
in the npm package ``@agentclientprotocol/sdk`` (``schema/vN`` in ``.cache/acp-schema/package`` as
unpacked by ``.ci/run``, or in ``tests/interop/node_modules``). The package (2.4.0) ships both
versions. In CI a missing schema is a failure with a clear message; on a developer machine without
any copy the tests that need it skip with that reason.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
NPM_HINT = "npm pack @agentclientprotocol/sdk@2.4.0 && tar xzf agentclientprotocol-sdk-2.4.0.tgz"
ENV_VARS = {2: "ACP_SCHEMA_DIR", 1: "ACP_V1_SCHEMA_DIR"}


def candidate_dirs(version: int = 2) -> list[Path]:
    env = os.environ.get(ENV_VARS[version])
    dirs = [Path(env)] if env else []
    dirs += [
        REPO.parent / "shared" / "spec" / "schema" / f"v{version}",
        REPO / ".cache" / "acp-schema" / "package" / "schema" / f"v{version}",
        REPO / "tests" / "interop" / "node_modules" / "@agentclientprotocol" / "sdk" / "schema" / f"v{version}",
    ]
    return dirs


def find_schema_dir(version: int = 2) -> Path | None:
    for directory in candidate_dirs(version):
        if (directory / "schema.json").is_file():
            return directory
    return None


def require_schema_dir(version: int = 2) -> Path:
    """The schema folder, or fail (CI) / skip (elsewhere) naming every place that was tried."""
    found = find_schema_dir(version)
    if found is not None:
        return found
    tried = ", ".join(str(d) for d in candidate_dirs(version))
    message = (
        f"official ACP v{version} schema not found (tried {tried}); "
        f"get it with: {NPM_HINT} (it holds package/schema/v{version})"
    )
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)
