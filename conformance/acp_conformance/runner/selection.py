"""Which checks a run covers: ``--check ID``, ``--area NAME`` and ``--tier TIER`` choose a subset of the check set.

Within one option the values add up (``--check a --check b``: either); different options narrow each other
(``--area sessions --tier MANDATORY``: the MANDATORY checks of the sessions area). A run of a subset cannot say
that an agent conforms: the verdict is ``partial`` and names the checks left out (``verdict.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Selection", "area_option"]


def area_option(area: str) -> str:
    """An area as ``--area`` spells it: ``prompt turn`` is ``prompt-turn``."""
    return area.replace(" ", "-")


@dataclass(frozen=True)
class Selection:
    checks: tuple[str, ...] = ()
    areas: tuple[str, ...] = ()  # rule areas as the registry names them ("prompt turn")
    tiers: tuple[str, ...] = ()  # tier names ("MANDATORY")

    @classmethod
    def of(cls, checks: Sequence[str] = (), areas: Sequence[str] = (), tiers: Sequence[str] = ()) -> Selection:
        """From option values (areas in either spelling, tiers in any case)."""
        return cls(tuple(checks), tuple(a.replace("-", " ") for a in areas), tuple(t.upper() for t in tiers))

    @property
    def active(self) -> bool:
        """True when the options choose a subset (some checks may be left out)."""
        return bool(self.checks or self.areas or self.tiers)

    def chooses(self, check_id: str, area: str, tier: str) -> bool:
        return (
            (not self.checks or check_id in self.checks)
            and (not self.areas or area in self.areas)
            and (not self.tiers or tier in self.tiers)
        )

    def describe(self) -> str:
        """The options as typed, e.g. ``--check initialize --tier MANDATORY`` (empty without a selection)."""
        words = [f"--check {c}" for c in self.checks]
        words += [f"--area {area_option(a)}" for a in self.areas]
        words += [f"--tier {t}" for t in self.tiers]
        return " ".join(words)
