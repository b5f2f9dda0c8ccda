"""v2 checks for requirements of the official kit that the rest of the set left open: content blocks behind the
prompt capabilities, the two forms of optional session fields, and ``_meta`` on a prompt (kit.py, tiers.py)."""

from __future__ import annotations

import os
from typing import Any

from acp_session.schema.types import (
    AudioContent,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
)

from .common import write_readme
from .probe import AUTH_REQUIRED, LoginRequired, NotApplicable, Probe
from .registry import CheckContext, check, require

__all__ = ["meta_accepted", "optional_forms", "prompt_capabilities"]

_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
_WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="


def _capability_blocks(readme: str) -> dict[str, Any]:
    return {
        "image": ImageContent(data=_PNG, mime_type="image/png"),
        "audio": AudioContent(data=_WAV, mime_type="audio/wav"),
        "embeddedContext": EmbeddedResource(
            resource=TextResourceContents(uri=f"file://{readme}", text="# A file\n", mime_type="text/markdown")
        ),
    }


async def _accepted(p: Probe, sid: str, start: int, rid: int, rule: str, what: str) -> None:
    """The prompt ``rid`` was answered without an error (-32000 is a login the run lacks), then its turn settles."""
    frame = await p.response(rid, start=start)
    require(frame is not None, rule, f"no response to {what}")
    assert frame is not None
    if frame.error_code == AUTH_REQUIRED:
        raise LoginRequired("session/prompt", frame.error)
    require(frame.error is None, rule, f"{what} was rejected: {frame.message}")
    await p.settle(sid, start)  # the idle update is turn-lifecycle's subject


@check(
    2,
    "prompt-capabilities",
    "a prompt with each block type the agent advertises (image, audio, embedded context) is accepted",
    "prompt turn",
    ("initialization.mdx#prompt-capabilities", "content.mdx"),
)
async def prompt_capabilities(ctx: CheckContext) -> str | None:
    p = ctx.probe
    offered = p.session_capability("prompt")
    prompt = offered if isinstance(offered, dict) else {}
    advertised = [name for name in ("image", "audio", "embeddedContext") if isinstance(prompt.get(name), dict)]
    if not advertised:
        raise NotApplicable("the agent advertises no image, audio or embedded context prompts")
    blocks = _capability_blocks(write_readme(ctx.cwd))
    sid = await p.new_session(ctx.cwd)
    for name in advertised:
        start = p.mark
        rid = await p.prompt(sid, "", [TextContent(text=f"A prompt with a {name} block."), blocks[name]])
        await _accepted(p, sid, start, rid, "initialization.mdx#prompt-capabilities", f"a prompt with a {name} block")
    return ", ".join(advertised)


@check(
    2,
    "optional-forms",
    "session/new takes mcpServers omitted or []; additionalDirectories on new and resume when advertised",
    "sessions",
    ("session-setup.mdx", "schema:NewSessionRequest", "schema:ResumeSessionRequest"),
    prompts=False,
)
async def optional_forms(ctx: CheckContext) -> str | None:
    p = ctx.probe
    done = ["mcpServers omitted"]  # every other check's session/new omits it
    answer = await p.call("session/new", {"cwd": ctx.cwd, "mcpServers": []}, rule="schema:NewSessionRequest")
    require(answer.error is None, "schema:NewSessionRequest", f"session/new with mcpServers: [] failed: {answer.error}")
    done.append("mcpServers: []")
    if p.session_capability("additionalDirectories") is None:
        return ", ".join(done) + " (no additionalDirectories advertised)"
    extra = os.path.join(ctx.cwd, "extra")
    os.makedirs(extra, exist_ok=True)
    params = {"cwd": ctx.cwd, "additionalDirectories": [extra]}
    answer = await p.call("session/new", params, rule="session-setup.mdx")
    require(answer.error is None, "session-setup.mdx", f"session/new with additionalDirectories failed: {answer.error}")
    sid = (answer.result or {}).get("sessionId") if isinstance(answer.result, dict) else None
    done.append("additionalDirectories on session/new")
    if isinstance(sid, str):  # session/resume is part of the v2 session baseline
        resumed = await p.call("session/resume", {"sessionId": sid, **params}, rule="schema:ResumeSessionRequest")
        require(
            resumed.error is None,
            "schema:ResumeSessionRequest",
            f"session/resume with additionalDirectories failed: {resumed.error}",
        )
        done.append("on session/resume")
    return ", ".join(done)


@check(
    2,
    "meta-accepted",
    "a prompt carrying _meta (a traceparent) is accepted",
    "errors and extensibility",
    ("extensibility.mdx",),
)
async def meta_accepted(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    start = p.mark
    meta = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
    params = {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}], "_meta": meta}
    rid = await p.request("session/prompt", params)
    await _accepted(p, sid, start, rid, "extensibility.mdx", "a prompt carrying _meta")
    return None
