"""Every Python block in docs/ is an example that a test runs (``# example: NAME``) or a signature listing; no
doc points at files outside the repository."""

from __future__ import annotations

import re

from tests.schema_source import REPO

DOCS = sorted((REPO / "docs").glob("*.md"))
PYTHON = re.compile(r"```python\n(.*?)```", re.DOTALL)
# The tests that run each doc's examples, by doc: they read the blocks tagged "# example: NAME".
RUN_BY = {
    "client.md": ("tests/client/test_docs_examples.py", {"connect", "providers", "sessions"}),
    "conversation.md": (
        "tests/conversation/test_docs_conversation.py",
        {"chat", "streams", "spawn", "transcript", "reconnect"},
    ),
    "protocol-versions.md": ("tests/protocol/test_docs_protocol_versions.py", {"versions", "preview"}),
    "providers.md": ("tests/providers/test_docs.py", {"buffers"}),
    "embedding.md": ("tests/client/test_docs_embedding.py", {"editor"}),
    "registry.md": ("tests/registry/test_docs_registry.py", {"registry", "limits"}),
    "mcp.md": ("tests/mcp/test_docs_and_extra.py", {"builtin", "configs"}),
    "observability.md": ("tests/telemetry/test_docs_observability.py", {"traces"}),
    "remote.md": ("tests/remote/test_docs_remote.py", {"remote"}),
    "serve.md": ("tests/server/test_docs_serve.py", {"serve", "host"}),
    "porting.md": ("tests/interop/test_docs_porting.py", {"sandbox", "persona", "websocket"}),
}
# Blocks that show a signature, not something to run (the doc's name, the block's first line).
SIGNATURES = {
    ("providers.md", "LocalFileSystem(roots=(), *, read=True, write=True, max_read_bytes=16 * 1024 * 1024)"),
    (
        "providers.md",
        "LocalTerminals(roots=(), *, env=None, output_byte_limit=1024 * 1024, max_terminals=32, kill_grace=2.0, "
        "reap_descendants=True)",
    ),
    ("providers.md", "class FileSystemProvider(Protocol):"),
}


def test_every_python_block_is_a_run_example_or_a_signature() -> None:
    found: dict[str, set[str]] = {}
    for doc in DOCS:
        for block in PYTHON.findall(doc.read_text(encoding="utf-8")):
            first = block.split("\n", 1)[0]
            tag = re.fullmatch(r"# example: (\w+)", first)
            if tag:
                found.setdefault(doc.name, set()).add(tag[1])
            else:
                assert (doc.name, first) in SIGNATURES, f"{doc.name}: a Python block no test runs: {first!r}"
    assert found == {name: names for name, (_, names) in RUN_BY.items()}
    for name, (test, _) in RUN_BY.items():
        assert name in (REPO / test).read_text(encoding="utf-8"), (name, test)


def test_no_doc_points_outside_the_repository() -> None:
    for path in [*DOCS, REPO / "README.md"]:
        text = path.read_text(encoding="utf-8")
        assert "../shared" not in text, f"{path.name} points at ../shared, which users do not have"
        for target in re.findall(r"\]\((\.\./[^)]*)\)", text):
            assert (path.parent / target.split("#")[0]).resolve().is_relative_to(REPO), (path.name, target)
