"""The API reference (issue 30 item 12), built as .ci/run builds it (``mkdocs build --strict``): every public
class shows its constructor's signature, no raw Sphinx markup or internal code, no unexplained "seed", every
export of the package documented, ``spawn`` shown with ``async with``."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest

import acp_session

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    mkdocs = Path(sys.executable).parent / "mkdocs"
    result = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return out / "api"


def page_text(path: Path) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8"))))


CLASS_SECTION = re.compile(
    r'<div class="doc doc-object doc-class">\s*<h\d id="([\w.]+)"[^>]*>.*?</h\d>\s*(<div class="doc-signature)?', re.S
)


ATTRIBUTE_SIGNATURE = re.compile(
    r'<div class="doc doc-object doc-attribute">.*?</h\d>\s*<div class="doc-signature[^>]*>(.*?)</div>', re.S
)


def test_every_public_class_shows_its_signature(site: Path) -> None:
    seen, missing = set(), []
    for page in sorted(site.glob("*.html")):
        for match in CLASS_SECTION.finditer(page.read_text(encoding="utf-8")):
            path = match.group(1)
            module, _, name = path.rpartition(".")
            cls = getattr(__import__(module, fromlist=[name]), name)
            seen.add(name)
            if getattr(cls, "_is_protocol", False):
                continue  # an interface to implement (Transport, FileSystemProvider, ...), not to construct
            if match.group(2) is None:
                missing.append(f"{page.name}: {path}")
    assert not missing, "classes without a signature in the API reference: " + ", ".join(missing)
    assert {"ClientBuilder", "ClientConnection", "Conversation", "ChatText", "ToolCall"} <= seen


def test_client_builder_signature_and_spawn_with_async_with(site: Path) -> None:
    text = page_text(site / "client.html")
    assert (
        'ClientBuilder( name: str = "acp-session", version: str = __version__, *, title: str | None = None, )' in text
    )
    assert 'async with ClientBuilder("my-editor", "1.0").spawn(' in text


def test_no_raw_markup_internal_code_or_unexplained_words(site: Path) -> None:
    for page in sorted(site.glob("*.html")):
        text = page_text(page)
        for role in (":class:", ":func:", ":meth:", ":attr:"):
            assert role not in text, (page.name, role)
        assert not re.search(r"\bseed\b", text, re.I), page.name
    for page in sorted(site.glob("*.html")):
        # an attribute shows its name and type, never the code that set it (``turn = turn``)
        for match in ATTRIBUTE_SIGNATURE.finditer(page.read_text(encoding="utf-8")):
            signature = html.unescape(re.sub(r"<[^>]+>", "", match.group(1)))
            assert " = " not in signature, (page.name, signature)
    # ClientConnection's internal contract (SessionLink, ClientSide) stays out of it
    client = (site / "client.html").read_text(encoding="utf-8")
    for internal in ("send_tracked", "receive_updates", "open_new_session", "decide_permission"):
        assert f'id="acp_session.client.ClientConnection.{internal}"' not in client
    assert 'id="acp_session.client.ClientConnection.new_session"' in client


def test_every_export_of_the_package_is_documented(site: Path) -> None:
    documented = " ".join(page_text(page) for page in site.glob("*.html"))
    for name in acp_session.__all__:
        if not name.startswith("_"):
            assert f"{name}" in documented, name
