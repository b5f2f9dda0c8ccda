"""The flag a request waits on behaves like anyio.Event on every backend."""

from __future__ import annotations

import anyio
import pytest

from acp_session.transport.backend import current_backend

pytestmark = pytest.mark.anyio


async def test_a_cancelled_waiter_leaves_the_others_waiting_and_set_wakes_them() -> None:
    flag = current_backend().new_flag()
    woken: list[str] = []

    async def wait(name: str) -> None:
        await flag.wait()
        woken.append(name)

    async with anyio.create_task_group() as tg:
        tg.start_soon(wait, "a")
        with anyio.move_on_after(0.02) as scope:
            await flag.wait()
        assert scope.cancelled_caught and not flag.is_set()
        tg.start_soon(wait, "b")
        await anyio.sleep(0.01)
        assert woken == []
        flag.set()
        flag.set()  # idempotent
    assert sorted(woken) == ["a", "b"] and flag.is_set()
    with anyio.fail_after(1):
        await flag.wait()  # already set: returns at once
