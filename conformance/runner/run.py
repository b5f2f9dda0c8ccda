"""Run checks, each against a fresh agent process with its own timeout, and collect the results."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass

import anyio

from .checks import CHECKS, Check, CheckContext
from .probe import Fail, NotApplicable, Probe, spawn_probe

__all__ = ["STARTUP_TIMEOUT", "CheckResult", "run_check", "run_checks"]

STARTUP_TIMEOUT = 20.0


@dataclass
class CheckResult:
    id: str
    title: str
    rules: tuple[str, ...]
    status: str  # "pass", "fail" or "n/a"
    message: str
    seconds: float


async def run_check(check: Check, argv: Sequence[str], *, timeout: float | None = None) -> CheckResult:
    limit = check.timeout if timeout is None else timeout
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="acp-conformance-") as cwd:
        try:
            # The limit counts from a started agent: starting it (initialize) has its own allowance.
            with anyio.fail_after(limit + STARTUP_TIMEOUT):
                async with spawn_probe(argv, timeout=min(5.0, limit)) as probe:
                    # Outcomes are caught here, inside the probe's task group, so they are never wrapped.
                    status, message = await _outcome(check, probe, cwd)
        except TimeoutError:
            status, message = "fail", f"{check.rules[0]}: the check did not finish within {limit:g}s"
        except OSError as exc:
            status, message = "fail", f"could not run the agent: {exc}"
    return CheckResult(check.id, check.title, check.rules, status, message, time.monotonic() - started)


async def _outcome(check: Check, probe: Probe, cwd: str) -> tuple[str, str]:
    try:
        if check.initialize:
            await probe.initialize()
        note = await check.fn(CheckContext(probe, cwd))
        if probe.eof:
            raise Fail("transports.mdx#stdio", "the agent closed stdout during the check")
    except Fail as exc:
        return "fail", str(exc)
    except NotApplicable as exc:
        return "n/a", str(exc)
    except Exception as exc:  # a bug in a check, or an agent answer of an unexpected shape
        return "fail", f"{check.rules[0]}: unexpected {type(exc).__name__}: {exc}"
    return "pass", note or ""


async def run_checks(
    argv: Sequence[str], *, only: Sequence[str] = (), jobs: int = 4, timeout: float | None = None
) -> list[CheckResult]:
    selected = [c for c in CHECKS if not only or c.id in only]
    results: dict[str, CheckResult] = {}
    limiter = anyio.CapacityLimiter(max(1, jobs))

    async def one(check: Check) -> None:
        async with limiter:
            results[check.id] = await run_check(check, argv, timeout=timeout)

    async with anyio.create_task_group() as tg:
        for check in selected:
            tg.start_soon(one, check)
    return [results[c.id] for c in selected]
