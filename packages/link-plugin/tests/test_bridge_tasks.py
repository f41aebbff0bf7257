"""A bridge's loops end when cancelled, even when the cancel lands as what they wait for comes."""

from __future__ import annotations

import asyncio

from test_bridge_carry import Bridge, until

from link_plugin.waits import waited, within
from lnk_testing.endpoint import ScriptedHarness


async def _ends(task: asyncio.Task[None]) -> bool:
    done, _ = await asyncio.wait({task}, timeout=2)
    return bool(done)


def test_a_wait_cancelled_as_its_event_comes_is_cancelled() -> None:
    async def main() -> tuple[bool, bool]:
        event = asyncio.Event()

        async def loop() -> None:
            while True:
                await waited(event, 10)
                event.clear()

        task = asyncio.create_task(loop())
        await asyncio.sleep(0.01)
        event.set()
        task.cancel()
        return await _ends(task), task.cancelled()

    assert asyncio.run(main()) == (True, True)


def test_a_limited_wait_cancelled_as_it_finishes_is_cancelled() -> None:
    """As the endpoint client's connect and proof wait: the cancel wins over the result."""

    async def main() -> tuple[bool, bool]:
        done = asyncio.get_running_loop().create_future()

        async def loop() -> None:
            while True:
                await within(asyncio.shield(done), 10)
                await asyncio.sleep(0.01)

        task = asyncio.create_task(loop())
        await asyncio.sleep(0.01)
        done.set_result(None)
        task.cancel()
        return await _ends(task), task.cancelled()

    assert asyncio.run(main()) == (True, True)


def test_recovery_cancelled_as_the_endpoint_is_lost_ends(harness: ScriptedHarness) -> None:
    """As `asyncio.run` cancels what is left when a bridge's main ends: it must not wait forever."""
    bridge = Bridge(harness.ref)

    async def main() -> bool:
        recovery = asyncio.create_task(bridge.recovery.run())
        await until(lambda: harness.recovers >= 1)
        await asyncio.sleep(0.05)
        bridge.recovery.lost()
        recovery.cancel()
        return await _ends(recovery)

    assert asyncio.run(main())
