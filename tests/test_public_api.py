"""Every name the docs import from acp_session still imports (issue 31: the client split keeps the public API).

The code blocks of README.md and docs/*.md are scanned for ``from acp_session... import ...`` (parenthesised
lists too, ``as`` aliases dropped); each module is imported and each name looked up on it, so a moved or
renamed name fails here before a reader's copy of the example does.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
IMPORT = re.compile(r"^[ \t]*from[ \t]+(acp_session[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]+)", re.M)


def documented_imports() -> dict[tuple[str, str], list[str]]:
    """(module, name) -> the doc files that import it."""
    found: dict[tuple[str, str], list[str]] = {}
    for path in DOCS:
        for block in FENCE.findall(path.read_text(encoding="utf-8")):
            for module, names in IMPORT.findall(block):
                statement = f"from {module} import {names.strip()}"
                try:
                    node = ast.parse(statement).body[0]
                except SyntaxError:  # a trailing comment or continuation the regex cut: parse the names by hand
                    node = ast.parse(f"from {module} import {names.split('#')[0].strip().rstrip(',')}").body[0]
                assert isinstance(node, ast.ImportFrom)
                for alias in node.names:
                    found.setdefault((module, alias.name), []).append(path.relative_to(ROOT).as_posix())
    return found


IMPORTS = documented_imports()


def test_the_docs_import_names_from_the_package() -> None:
    # The scan finds the imports the docs are known to make (a broken pattern would find nothing and pass).
    assert ("acp_session", "ClientBuilder") in IMPORTS
    assert ("acp_session.conversation", "Conversation") in IMPORTS or ("acp_session", "Conversation") in IMPORTS
    assert len(IMPORTS) > 10


@pytest.mark.parametrize(("module", "name"), sorted(IMPORTS), ids=lambda value: str(value))
def test_every_documented_name_imports(module: str, name: str) -> None:
    imported = importlib.import_module(module)
    if not hasattr(imported, name):
        importlib.import_module(f"{module}.{name}")  # a submodule: ``from acp_session import conversation``
    else:
        assert getattr(imported, name) is not None, (module, name, IMPORTS[(module, name)])


def test_the_top_level_exports_every_public_name_of_the_client_package() -> None:
    import acp_session
    import acp_session.client

    for name in acp_session.client.__all__:
        if name not in ("ElicitationMode", "SystemPromptInput"):  # type aliases, imported from acp_session.client
            assert getattr(acp_session, name) is getattr(acp_session.client, name), name
    for name in acp_session.__all__:
        assert hasattr(acp_session, name), name
