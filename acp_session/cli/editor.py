"""Interactive input with prompt_toolkit (the ``cli`` extra): multi-line editing, history, slash-command completion.

A prompt is submitted with Enter. A paste arrives whole (bracketed paste) and stays one prompt, newlines and all;
Alt-Enter (or Esc then Enter) starts a new line, and so does Enter while a fenced block (a line starting with
```` ``` ````) is open or the line ends with ``\\``. Up/Down and Ctrl-R recall earlier prompts, kept across runs
in a file; Tab completes the agent's slash commands (its ``available_commands_update``) and ``/exit`` /
``/quit``. Ctrl-C is handed to ``on_interrupt`` (the CLI cancels the active work or offers to quit); Ctrl-D on an
empty line ends the input.

The reader has the interface of ``prompts.LineReader`` (``readline``, ``editing``, ``fd``, ``redraw``,
``close``) so permission questions and the chat loop use either. prompt_toolkit needs asyncio, which the CLI
runs on.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import anyio

__all__ = [
    "EXIT_WORDS",
    "WITHDRAW_GRACE",
    "EditorReader",
    "continues",
    "editor_available",
    "editor_wanted",
    "slash_completions",
]

EXIT_WORDS = ("/exit", "/quit")
"""What ends the interactive loop (also Ctrl-D); never sent to the agent."""

WITHDRAW_GRACE = 5.0
"""Seconds a question waits, after Ctrl-C, to be withdrawn (the work cancelled) before it is asked again."""


def editor_available() -> bool:
    """Whether prompt_toolkit can be imported (the ``cli`` extra is installed)."""
    try:
        import prompt_toolkit  # noqa: F401
    except ImportError:
        return False
    return True


_FENCE = re.compile(r"^\s*(```|~~~)", re.MULTILINE)


def continues(text: str) -> bool:
    """Whether Enter should start a new line instead of submitting ``text``: a fenced block is still open, or the
    last line ends with a backslash."""
    return len(_FENCE.findall(text)) % 2 == 1 or text.endswith("\\")


class EditorReader:
    """Reads prompts and answers at the terminal with prompt_toolkit; the prompt is drawn on stderr, so stdout
    keeps only the answers."""

    editing = True

    def __init__(
        self,
        history_file: Path | None,
        commands: Callable[[], Iterable[tuple[str, str]]],
        on_interrupt: Callable[[], None],
        arguments: Callable[[str], Iterable[tuple[str, str, int]]] | None = None,
    ) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory, InMemoryHistory
        from prompt_toolkit.output import create_output

        self.fd = sys.stdin.fileno()
        self.on_interrupt = on_interrupt
        self._typed = ""
        output = create_output(stdout=sys.stderr)
        history: Any = InMemoryHistory()
        if history_file is not None:
            try:
                history_file.parent.mkdir(parents=True, exist_ok=True)
                history = FileHistory(str(history_file))
            except OSError:
                pass
        self._prompts: Any = PromptSession(
            history=history,
            completer=_slash_completer(commands, arguments),
            complete_while_typing=True,
            reserve_space_for_menu=4,
            multiline=True,
            key_bindings=self._bindings(submit_fences=True),
            prompt_continuation=lambda width, line, wrapped: "." * max(width - 1, 0) + " ",
            output=output,
        )
        self._answers: Any = PromptSession(
            history=InMemoryHistory(), key_bindings=self._bindings(submit_fences=False), output=output
        )

    def _bindings(self, *, submit_fences: bool) -> Any:
        from prompt_toolkit.key_binding import KeyBindings

        bindings = KeyBindings()

        @bindings.add("enter")
        def _enter(event: Any) -> None:
            buffer = event.current_buffer
            state = buffer.complete_state
            if state is not None and state.current_completion is not None:
                buffer.apply_completion(state.current_completion)  # and send it
            if submit_fences and continues(buffer.text):
                buffer.insert_text("\n")
            else:
                buffer.validate_and_handle()

        @bindings.add("escape", "enter")
        def _newline(event: Any) -> None:
            event.current_buffer.insert_text("\n")

        @bindings.add("c-c")
        def _interrupt(event: Any) -> None:
            self._typed = event.current_buffer.text
            event.app.exit(exception=KeyboardInterrupt())

        return bindings

    async def readline(self, prompt: str = "", *, remember: bool = True) -> str | None:
        """The next prompt (may span lines), or None after Ctrl-D on an empty line. Ctrl-C calls ``on_interrupt``
        and asks again with the text typed so far (unless the interrupt cancelled this read)."""
        from prompt_toolkit.formatted_text import ANSI

        session = self._prompts if remember else self._answers
        typed = ""
        while True:
            try:
                text: str = await session.prompt_async(ANSI(prompt), default=typed, handle_sigint=False)
            except KeyboardInterrupt:
                typed, self._typed = self._typed, ""
                self.on_interrupt()
                if not remember:  # a question: Ctrl-C cancels the work and so withdraws it; no prompt drawn again
                    with anyio.move_on_after(WITHDRAW_GRACE):
                        await anyio.sleep_forever()
                continue
            except EOFError:
                return None
            return text

    def redraw(self) -> None:
        """prompt_toolkit redraws its own prompt."""

    def close(self) -> None:
        """History is written as prompts are submitted."""


def slash_completions(text: str, commands: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """``(word, description)`` for each slash command ``text`` (the prompt so far) may complete to: the agent's
    commands, then ``/exit`` and ``/quit``; nothing once the prompt has a space or does not start with ``/``."""
    if not text.startswith("/") or any(c.isspace() for c in text):
        return []
    found: dict[str, str] = {}
    for name, description in [*commands, *((word[1:], "leave the chat") for word in EXIT_WORDS)]:
        word = "/" + name
        if word.startswith(text) and word not in found:
            found[word] = description
    return list(found.items())


def _slash_completer(
    commands: Callable[[], Iterable[tuple[str, str]]],
    arguments: Callable[[str], Iterable[tuple[str, str, int]]] | None = None,
) -> Any:
    """Slash commands; then, after a command and a space, ``arguments(text)``: (word, description, start)."""
    from prompt_toolkit.completion import Completer, Completion

    class SlashCompleter(Completer):
        def get_completions(self, document: Any, complete_event: Any) -> Iterator[Completion]:
            text = document.text_before_cursor
            for word, description in slash_completions(text, commands()):
                yield Completion(word, start_position=-len(text), display_meta=description)
            if arguments is not None:
                for word, description, start in arguments(text):
                    yield Completion(word, start_position=start, display_meta=description)

    return SlashCompleter()


def editor_wanted() -> bool:
    """Interactive editing needs stdin and stderr on a terminal that can take cursor moves."""
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return os.isatty(sys.stdin.fileno()) and os.isatty(sys.stderr.fileno())
    except (AttributeError, ValueError, OSError):
        return False
