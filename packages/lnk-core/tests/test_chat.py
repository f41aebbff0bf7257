"""`lnk agent chat` goes the way a bridge does: the proof first, so a program holding the port gets no
key; and what holds the endpoint key (its run folder, the harness's settings) is for lnk alone."""

from __future__ import annotations

import asyncio
import os
import stat

import pytest
from rich.console import Console
from world import World

from link_conformance.fakes import FakeEndpoint
from link_plugin.channel import EndpointRef
from link_plugin.endpoint import EndpointError, ProofFailed
from lnk.chat import Chat


def test_chat_sends_the_key_only_to_an_endpoint_that_proves_itself(world: World) -> None:
    world.start("work")
    spec = world.spec("work")
    for honest in (False, True):
        impostor = FakeEndpoint(key=spec.endpoint.key if spec.endpoint else "", honest=honest).start()
        try:
            moved = spec.model_copy(update={"endpoint": EndpointRef(url=f"{impostor.origin}/v1", key=impostor.key)})
            chat = Chat(world.agent("work"), moved, Console(stderr=True))
            with pytest.raises(EndpointError) as failed:
                asyncio.run(chat.say("hello", lines=None, write=lambda _: None))  # type: ignore[arg-type]
        finally:
            impostor.stop()
        assert impostor.proofs == 1
        if honest:
            assert impostor.keyed == ["/v1/chat/completions"]  # proved itself: then, and only then, the key
        else:
            assert isinstance(failed.value, ProofFailed)
            assert impostor.keyed == [] and not impostor.saw("hello")

    # What holds the endpoint key is lnk's alone.
    agent = world.agent("work")
    assert stat.S_IMODE(os.stat(agent.run.root).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(agent.run.spec).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(agent.run.control).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(world.spec("work").settings_file).st_mode) == 0o600
