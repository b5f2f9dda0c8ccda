"""Part 3 of the v2 mutation table's runs (``mutants_v2_runs.py``): these modes turn exactly their kit ids and
checks FAIL, and nothing else moves against the healthy agent's run."""

from __future__ import annotations

import pytest

from .mutants_v2_runs import check_part


@pytest.mark.anyio
async def test_each_broken_variant_fails_exactly_its_ids(zygote: str, anyio_backend: str) -> None:
    await check_part(zygote, 2, anyio_backend)
