"""The script a scripted model follows: which reply a request gets, independent of the wire API.

A prompt names its scenario with a marker, ``[[scripted:NAME key=value ...]]`` (values without spaces). The
model's reply to a request is step N of that scenario, where N counts the tool calls the model already made
since the prompt carrying the marker (the agents send the whole conversation with every request, so the
responder needs no memory). A tool step names an abstract tool (``write`` a file, run a ``shell`` command); the
responder maps it onto whichever matching tool the agent offered in the request (``Write``, ``apply_patch``,
``bash`` ...), so one script serves every agent.

Requests that offer no tools (titles, summaries, quota probes) and requests without a marker get a short text
reply, ``AUX_REPLY``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "AUX_REPLY",
    "SCENARIOS",
    "Reply",
    "Step",
    "ToolChoice",
    "Turn",
    "choose_tool",
    "marker",
    "parse_marker",
    "reply_for",
]

AUX_REPLY = "Scripted."
_MARKER = re.compile(r"\[\[scripted:([a-z0-9_-]+)((?:\s+[a-z_]+=\S+?)*)\s*\]\]")


@dataclass(frozen=True)
class Step:
    """One reply of the model: text (streamed in ``chunks`` pieces, ``delay`` seconds apart) or a tool call."""

    text: str = ""
    tool: str | None = None  # "write" or "shell"
    chunks: int = 1
    delay: float = 0.0


# The scenarios the whole-turn driver uses. ``{path}``, ``{content}`` and ``{command}`` come from the marker.
SCENARIOS: dict[str, tuple[Step, ...]] = {
    "text": (Step(text="pong"),),
    "edit": (Step(tool="write"), Step(text="Edit step finished.")),
    "shell": (Step(tool="shell"), Step(text="Shell step finished.")),
    "long": (Step(text="word " * 600, chunks=600, delay=0.05),),
    "second": (Step(text="second turn: pong again"),),
    "system": (Step(text="system prompt seen"),),
}


def marker(scenario: str, **params: str) -> str:
    """The marker text a prompt carries to choose ``scenario`` (values must not contain spaces)."""
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; known: {', '.join(SCENARIOS)}")
    for key, value in params.items():
        if not value or any(c.isspace() for c in value) or "]]" in value:
            raise ValueError(f"marker value {key}={value!r} must be non-empty, without spaces or ']]'")
    args = "".join(f" {key}={value}" for key, value in params.items())
    return f"[[scripted:{scenario}{args}]]"


def parse_marker(text: str) -> tuple[str, dict[str, str]] | None:
    """The last marker in ``text``: its scenario and parameters (None when there is none)."""
    every = list(_MARKER.finditer(text))
    if not every:
        return None
    found = every[-1]
    params = dict(part.split("=", 1) for part in found.group(2).split())
    return found.group(1), params


@dataclass(frozen=True)
class Turn:
    """What a request says, reduced by a wire dialect: the user texts in order, each with the number of tool
    calls the model made after it (up to the next user text), the tools offered (name -> parameter names; a
    freeform tool has none) and the tool results sent back, in order."""

    users: Sequence[tuple[str, int]]
    tools: Mapping[str, Sequence[str]] = field(default_factory=dict)
    tool_results: Sequence[str] = ()


@dataclass(frozen=True)
class ToolChoice:
    """A concrete tool call: the offered tool's name and its arguments (``input`` is a freeform tool's text)."""

    name: str
    arguments: Mapping[str, object]
    freeform: bool = False


@dataclass(frozen=True)
class Reply:
    """The model's answer to one request."""

    scenario: str | None
    step: int
    text: str = ""
    tool: ToolChoice | None = None
    chunks: int = 1
    delay: float = 0.0

    def pieces(self) -> list[str]:
        """The text split into ``chunks`` pieces that join back to it."""
        if self.chunks <= 1 or not self.text:
            return [self.text] if self.text else []
        size = max(1, -(-len(self.text) // self.chunks))
        return [self.text[i : i + size] for i in range(0, len(self.text), size)]


def _find(tools: Mapping[str, Sequence[str]], *names: str) -> str | None:
    """The first offered tool called one of ``names`` (an MCP-prefixed ``mcp__x__Name`` counts)."""
    for name in names:
        for offered in tools:
            if offered == name or offered.endswith("__" + name):
                return offered
    return None


def _patch(path: str, content: str) -> str:
    lines = "".join(f"+{line}\n" for line in content.splitlines())
    return f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n"


def choose_tool(kind: str, params: Mapping[str, str], tools: Mapping[str, Sequence[str]]) -> ToolChoice | None:
    """Map an abstract tool step onto a tool the agent offered; None when it offered none that fits."""
    if kind == "write":
        path = params.get("path", "scripted.txt")
        content = params.get("content", "scripted").replace("_", " ") + "\n"
        name = _find(tools, "Write", "write_file", "write", "create")
        if name is not None:
            key = next((k for k in ("file_path", "filePath", "path") if k in tools[name]), "file_path")
            text_key = next((k for k in ("content", "file_text") if k in tools[name]), "content")
            return ToolChoice(name, {key: path, text_key: content})
        name = _find(tools, "apply_patch")
        if name is not None:
            patch = _patch(path, content)
            if "input" in tools[name] or not tools[name]:
                return ToolChoice(name, {"input": patch}, freeform=not tools[name])
            return ToolChoice(name, {"patch": patch})
        return None
    if kind == "shell":
        command = params.get("command", "echo_scripted").replace("_", " ")
        name = _find(tools, "Bash", "run_shell_command", "bash")
        if name is not None:
            return ToolChoice(name, {"command": command, "description": "Run the scripted command"})
        name = _find(tools, "exec_command")
        if name is not None:
            return ToolChoice(name, {"cmd": command})
        name = _find(tools, "shell_command")
        if name is not None:
            return ToolChoice(name, {"command": command})
        name = _find(tools, "shell", "local_shell")
        if name is not None:
            return ToolChoice(name, {"command": ["bash", "-lc", command]})
        return None
    raise ValueError(f"unknown tool kind {kind!r}")


def reply_for(turn: Turn) -> Reply:
    """The scripted reply to a request."""
    if not turn.tools:
        return Reply(None, 0, text=AUX_REPLY)
    calls = 0
    for text, after in reversed(turn.users):
        calls += after
        found = parse_marker(text)
        if found is None:
            continue
        scenario, params = found
        steps = SCENARIOS.get(scenario)
        if steps is None:
            return Reply(scenario, 0, text=f"unknown scenario {scenario}")
        index = min(calls, len(steps) - 1)
        step = steps[index]
        if step.tool is None:
            text_out = step.text
            if index > 0 and turn.tool_results:
                text_out += " Tool said: " + " ".join(turn.tool_results[-1].split())[:120]
            return Reply(scenario, index, text=text_out, chunks=step.chunks, delay=step.delay)
        choice = choose_tool(step.tool, params, turn.tools)
        if choice is None:
            offered = ", ".join(sorted(turn.tools))
            return Reply(scenario, index, text=f"no {step.tool} tool among: {offered}")
        return Reply(scenario, index, tool=choice)
    return Reply(None, 0, text=AUX_REPLY)
