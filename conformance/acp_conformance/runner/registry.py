"""What a check is, what it gets to work with, and the two check sets (protocol v1 and v2).

A check raises ``Fail(rule, message)`` (the agent breaks a MUST; the message starts with the rule),
``NotApplicable(reason)`` (the agent does not offer what the check needs, the behaviour is the agent's choice,
or no scenario says how to trigger it) or ``LoginRequired``; it may record warnings (a SHOULD the agent
does not follow: reported, never a failure) and notes. Returning means pass.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

from .outcomes import Fail, NotApplicable
from .probe import Probe
from .scenarios import SCENARIO_HELP, Scenario, Scenarios

__all__ = [
    "CheckFn",
    "AREAS",
    "CHECK_SETS",
    "Check",
    "CheckContext",
    "check",
    "in_report_order",
    "missing_scenario",
    "require",
]

# Rule areas, in report order.
AREAS = (
    "transport",
    "initialization",
    "sessions",
    "prompt turn",
    "permissions and tools",
    "cancellation",
    "close and resume",
    "client methods",
    "config and modes",
    "errors and extensibility",
    "background work",
)


def missing_scenario(name: str, scenarios: Scenarios) -> str:
    """Why a check that needs scenario ``name`` is not applicable, and how to make it so."""
    if scenarios.source:
        return f"needs the {name} scenario ({SCENARIO_HELP[name]}): add [{name}] to {scenarios.source}"
    return f"needs the {name} scenario: pass --scenarios FILE (see --help)"


@dataclass
class CheckContext:
    probe: Probe
    cwd: str  # this check's own sandbox directory (holds README.md)
    scenarios: Scenarios
    wait: float  # seconds to wait for one answer or one turn
    offer: int = 2  # the protocol version the runner offers
    auth: str | None = None  # the login method of --auth
    spawn: Callable[[], AbstractAsyncContextManager[Probe]] | None = None  # another agent process, not initialized
    used: list[Scenario] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    transcript_from: int | None = None  # where a failure's wire excerpt starts, if before the check (a shared exchange)

    def scenario(self, name: str) -> Scenario:
        """The scenario ``name`` from the file (recorded as used), or ``NotApplicable`` saying how to provide it."""
        found = self.scenarios.get(name)
        if found is None:
            raise NotApplicable(missing_scenario(name, self.scenarios))
        if found not in self.used:
            self.used.append(found)
        return found

    async def initialize(self, *, fs: bool = True, terminal: bool = True, elicitation: bool = False) -> dict[str, Any]:
        """For a check on a fresh agent process: initialize as the runner does (and log in with ``--auth``)."""
        result = await self.probe.initialize(self.offer, fs=fs, terminal=terminal, elicitation=elicitation)
        if self.auth is not None:
            await self.probe.login(self.auth)
        return result

    def optional_scenario(self, name: str) -> Scenario | None:
        return self.scenario(name) if name in self.scenarios else None

    def warn(self, rule: str, message: str) -> None:
        """A SHOULD the agent does not follow: reported as a warning, never as a failure."""
        self.warnings.append(f"{rule}: {message}")

    def note(self, message: str) -> None:
        self.notes.append(message)


CheckFn = Callable[[CheckContext], Awaitable[str | None]]


@dataclass(frozen=True)
class Check:
    id: str
    title: str
    area: str
    rules: tuple[str, ...]
    fn: CheckFn
    version: int
    scenarios: tuple[str, ...] = ()  # scenarios it needs (n/a without them)
    optional_scenarios: tuple[str, ...] = ()  # scenarios it uses when the file has them
    one_of_scenarios: bool = False  # it needs at least one of the optional scenarios
    needs_session: bool = True  # opens a session (n/a when the agent requires a login we do not have)
    prompts: bool = True  # sends a prompt (n/a when the agent requires a login for prompts)
    fresh: bool = False  # needs an agent process of its own, not initialized (it sends its own initialize)
    turns: int = 1  # scenario turns it runs (for its overall time limit)
    ends_process: bool = False  # it ends its (fresh) agent process on purpose: an exit is not a failure

    def time_limit(self, wait: float, scenarios: Scenarios) -> float:
        """The overall limit: a safety net above the individual waits, which are what normally end a check."""
        names = self.scenarios + self.optional_scenarios
        scenario_time = sum(s.timeout for name in names if (s := scenarios.get(name)) is not None)
        return 4 * wait + (self.turns + 1) * scenario_time + 5


CHECK_SETS: dict[int, list[Check]] = {1: [], 2: []}


def check(
    version: int,
    id: str,
    title: str,
    area: str,
    rules: tuple[str, ...],
    *,
    scenarios: tuple[str, ...] = (),
    optional_scenarios: tuple[str, ...] = (),
    one_of_scenarios: bool = False,
    needs_session: bool = True,
    prompts: bool = True,
    fresh: bool = False,
    turns: int = 1,
    ends_process: bool = False,
) -> Callable[[CheckFn], CheckFn]:
    assert area in AREAS, area

    def register(fn: CheckFn) -> CheckFn:
        CHECK_SETS[version].append(
            Check(
                id=id,
                title=title,
                area=area,
                rules=rules,
                fn=fn,
                version=version,
                scenarios=scenarios,
                optional_scenarios=optional_scenarios,
                one_of_scenarios=one_of_scenarios,
                needs_session=needs_session,
                prompts=prompts and needs_session,
                fresh=fresh,
                turns=turns,
                ends_process=ends_process,
            )
        )
        return fn

    return register


def in_report_order(checks: list[Check]) -> list[Check]:
    """The checks grouped by rule area (the order of ``AREAS``), in definition order within an area."""
    return sorted(checks, key=lambda c: AREAS.index(c.area))


def require(condition: bool, rule: str, message: str) -> None:
    if not condition:
        raise Fail(rule, message)
