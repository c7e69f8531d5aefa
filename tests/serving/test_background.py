"""The server's background loops: started in the event loop, running until stopped, stopped cleanly."""

from __future__ import annotations

import asyncio

from serving.background import BackgroundLoop


def test_a_loop_runs_from_start_to_stop_and_stop_before_start_is_harmless() -> None:
    ticks: list[int] = []

    async def tick() -> None:
        while True:
            ticks.append(len(ticks))
            await asyncio.sleep(0)

    async def scenario() -> None:
        loop = BackgroundLoop("ticker", tick)
        await loop.stop()  # never started: nothing to do
        assert not loop.running
        loop.start()
        await asyncio.sleep(0.01)
        assert loop.running and ticks
        await loop.stop()
        assert not loop.running
        seen = len(ticks)
        await asyncio.sleep(0.01)
        assert len(ticks) == seen  # cancelled: it ticks no more

    asyncio.run(scenario())


def test_a_loop_that_ended_by_itself_is_not_running() -> None:
    async def once() -> None:
        return None

    async def scenario() -> None:
        loop = BackgroundLoop("once", once)
        loop.start()
        await asyncio.sleep(0.01)
        assert not loop.running
        await loop.stop()

    asyncio.run(scenario())
