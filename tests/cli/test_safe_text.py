"""``safe_text.terminal_safe`` and ``json_safe`` (issue 41 items 9, 10), the writer every terminal output goes
through (``screen.Screen``), and the fields of the terminal renderer that carry agent strings."""

from __future__ import annotations

import ast
import io
import json
import re
import unicodedata
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from acp_session.cli.markdown import MarkdownStream
from acp_session.cli.render import TerminalRenderer
from acp_session.cli.safe_text import SUSPECT_RANGES, json_safe, terminal_safe
from acp_session.cli.screen import BOLD, Screen, Style, Styled
from acp_session.conversation import ChatNotice
from acp_session.schema import Notice

EVIL = "\x1b]52;c;b3duZWQ=\x07\x1b]0;title\x1b\\\x1b[3A\x1b[2K\r\x08\u009b2J\u009d0;t\u009c\x1bP1q\x1b\\"
EVIL += "\u202e\u2066\u200f"  # OSC 52, OSC 0, CSI, CR, BS, C1 CSI and OSC, DCS, then bidi

JOINERS = {"\u200c", "\u200d"}


def unsafe(char: str, newlines: bool) -> bool:
    """A character no output of terminal_safe may hold."""
    if newlines and char in "\n\t":
        return False
    category = unicodedata.category(char)
    return category in ("Cc", "Cs", "Zl", "Zp") or (category == "Cf" and char not in JOINERS)


# Text rich in what terminals execute: escapes and their pieces, C0/C1 controls, bidi and format characters.
hostile_text = st.text(
    st.one_of(
        st.sampled_from(["\x1b", "[", "]", "\\", "\x07", ";", "2", "J", "P", "\r", "\n", "\t", "\x08", "\x7f"]),
        st.characters(min_codepoint=0, max_codepoint=0x9F),
        st.sampled_from(["\u202a", "\u202e", "\u2066", "\u2069", "\u200e", "\u200f", "\u061c", "\u2028", "\ufeff"]),
        st.characters(categories=["Cf", "Cc", "Zl", "Zp", "Cs"]),
        st.characters(),
    ),
    max_size=80,
)


@settings(max_examples=400, deadline=None)
@given(hostile_text, st.booleans())
def test_the_output_never_holds_a_control_or_format_character(text: str, newlines: bool) -> None:
    cleaned = terminal_safe(text, newlines=newlines)
    assert not [char for char in cleaned if unsafe(char, newlines)]
    assert terminal_safe(cleaned, newlines=newlines) == cleaned  # cleaning twice changes nothing


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(codec="utf-8", exclude_categories=["Cc", "Cf", "Cs", "Zl", "Zp"]), max_size=80))
def test_printable_text_is_kept_as_it_is(text: str) -> None:
    assert terminal_safe(text) == text
    assert terminal_safe(text, newlines=True) == text


def test_escape_sequences_are_removed_whole() -> None:
    assert terminal_safe("a\x1b]52;c;b3duZWQ=\x07b") == "ab"  # OSC 52 (clipboard), ended by BEL
    assert terminal_safe("a\x1b]0;title\x1b\\b") == "ab"  # OSC 0 (window title), ended by ST
    assert terminal_safe("a\x1b[3;1Hb\x1b[2Kc\x1b[?25ld") == "abcd"  # CSI
    assert terminal_safe("a\u009b2Jb\u009b31mc") == "abc"  # C1 CSI (8-bit)
    assert terminal_safe("a\u009d0;t\u009cb\x1bP1q\x1b\\c") == "abc"  # C1 OSC, DCS
    assert terminal_safe("a\x1b7b\x1b(Bc\x1bcd") == "abcd"  # ESC 7, charset, reset
    assert terminal_safe("a\x1b]52;c;never ended") == "a"  # an unterminated string swallows the rest
    assert terminal_safe(EVIL) == " "  # (the carriage return of a one-line field is a space)


def test_bidi_and_format_characters_are_removed_but_joiners_kept() -> None:
    assert terminal_safe("invoice\u202etxt.exe") == "invoicetxt.exe"
    assert terminal_safe("\u2066a\u2069\u200e\u200f\u061c\ufeff\u200b\U000e0041") == "a"
    assert terminal_safe("\U0001f468\u200d\U0001f469 \u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645") == (
        "\U0001f468\u200d\U0001f469 \u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"
    )
    assert terminal_safe("a\ud800b") == "a\ufffdb"  # a lone surrogate cannot even be encoded


def test_newlines_and_tabs_only_where_the_field_may_hold_them() -> None:
    assert terminal_safe("a\nb\tc\r\nd\re\u2028f") == "a b c  d e f"
    assert terminal_safe("a\nb\tc\r\nd\re\u2028f", newlines=True) == "a\nb\tc\nd\ne\nf"
    assert terminal_safe("a\x0bb\x0cc\x85d", newlines=True) == "abcd"


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | hostile_text, lambda c: st.lists(c, max_size=4)))
def test_json_lines_keep_their_data_and_carry_no_control_character(value: object) -> None:
    line = json_safe(json.dumps({"value": value}, ensure_ascii=False))
    assert json.loads(line) == {"value": value}
    assert not [char for char in line if unsafe(char, newlines=False)]


def test_the_screen_cleans_every_span_and_writes_only_its_own_styles() -> None:
    out = io.StringIO()
    screen = Screen(out, color=True)
    assert screen.line("[tool] ", Styled("a" + EVIL + "b", (BOLD,)), " x\ny") == "[tool] \x1b[1ma b\x1b[0m x y\n"
    assert out.getvalue() == "[tool] \x1b[1ma b\x1b[0m x y\n"
    for bad in (lambda: screen.text(Styled("a", (Style("\x1b]0;x\x07"),))), lambda: screen.write("a", end="\r")):
        try:
            bad()
        except ValueError:
            continue
        raise AssertionError("an escape of the agent's was let through as a style or an end")


def test_markdown_links_show_their_target_and_write_no_hyperlink() -> None:
    out = io.StringIO()
    stream = MarkdownStream(out)
    stream.feed("[the docs](https://evil.example/x), <https://ok.example/> and [https://a.b/](https://a.b/)\n\n")
    stream.end()
    assert "\x1b]8" not in out.getvalue()  # no OSC 8: no link goes where the reader cannot see
    plain = " ".join(re.sub(r"\x1b\[[\d;?]*[a-zA-Z]", "", out.getvalue()).split())
    assert plain == "the docs (https://evil.example/x), https://ok.example/ and https://a.b/"  # a shown target: once


def test_markdown_keeps_single_line_breaks() -> None:
    out = io.StringIO()
    stream = MarkdownStream(out)
    stream.feed("Roses are red,\nviolets are **blue**.\n\n- one\n  still one\n\n")  # whole blocks: printed once
    stream.end()
    lines = [line.rstrip() for line in re.sub(r"\x1b\[[\d;?]*[a-zA-Z]", "", out.getvalue()).splitlines()]
    assert [line for line in lines if line] == ["Roses are red,", "violets are blue.", " \u2022 one", "   still one"]


def test_the_renderers_agent_fields_are_cleaned() -> None:
    out = io.StringIO()
    renderer = TerminalRenderer(out, color=False, err=out)
    renderer.event(ChatNotice(notice=Notice(severity="x" + EVIL, title="t" + EVIL, description="d" + EVIL)))
    renderer.permission("q" + EVIL, [("id", "n" + EVIL, "allow_once")], "id")
    renderer.info("session s" + EVIL)
    assert out.getvalue() == "[x ] t : d \n[permission] q : n \nsession s \n"


def test_the_suspect_ranges_hold_every_control_and_format_character_of_this_python() -> None:
    suspects = re.compile(f"[{SUSPECT_RANGES}]")
    missed = [
        f"U+{code:04X}"
        for code in range(0x110000)
        if unsafe(chr(code), newlines=True) and chr(code) not in "\n\t" and not suspects.match(chr(code))
    ]
    assert missed == [], f"add these to safe_text.SUSPECT_RANGES (unicodedata {unicodedata.unidata_version})"


def raw_writes(tree: ast.AST) -> list[str]:
    """The calls in ``tree`` that write to a stream other than through a ``Screen`` (``screen.write`` etc.)."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "print":
            found.append(f"line {node.lineno}: print()")
        elif isinstance(func, ast.Attribute) and func.attr in ("write", "writelines", "print"):
            owner = func.value
            name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
            if name != "screen":
                found.append(f"line {node.lineno}: {ast.unparse(func)}()")
    return found


def test_the_renderer_status_line_and_permission_question_write_only_through_the_screen() -> None:
    """So that a field added later cannot forget the cleaning: no other write path in these modules."""
    import acp_session.cli.prompts as prompts
    import acp_session.cli.render as render
    import acp_session.cli.status as status

    for module in (render, status):
        assert raw_writes(ast.parse(Path(str(module.__file__)).read_text())) == [], module.__name__
    question = next(
        node
        for node in ast.walk(ast.parse(Path(str(prompts.__file__)).read_text()))
        if isinstance(node, ast.AsyncFunctionDef) and node.name == "permission_question"
    )
    assert raw_writes(question) == []
