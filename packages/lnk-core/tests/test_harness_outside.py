"""Outside harnesses through the contract: `lnk agent use hermes` runs Hermes Agent (lnk-hermes,
from adapters/), `lnk agent use openclaw` OpenClaw (lnk-openclaw), in the real sandbox, answering
through its proxy, which adds the key the harness never holds; `lnk agent <harness> show` lists
its home and the shared release outside it; `lnk agent use link` switches back with the channels
and memory as they were."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from world import World, sandboxes

from lnk_testing.processes import descendants
from lnk_testing.stores import built_once, link_releases

pytestmark = pytest.mark.skipif(not sandboxes(), reason="bubblewrap can't make a sandbox here")

CONFIG = {"hermes": "hermes/config.yaml", "openclaw": "openclaw/openclaw.json"}
"""The harness's own config, in its home, that configure writes."""


@pytest.fixture(scope="module", params=sorted(CONFIG))
def harness(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The outside harness, its release in its adapter's shared store (lnk's environment, which
    every sandbox reads), so each agent's install only links to it. Building a release from its
    registry takes minutes: it is built once per machine in the user's cache folder, where the
    adapter's own tests keep theirs, and linked from there into a new environment's store, where
    `install` finds it whole and of this pin."""
    name: str = request.param
    if importlib.util.find_spec(f"lnk_{name}") is None:
        pytest.skip(f"lnk-{name} (adapters/lnk-{name}) isn't installed")
    release = importlib.import_module(f"lnk_{name}.release").RELEASE
    adapter = [str(Path(sys.executable).parent / f"lnk-{name}"), "install"]
    env = {**os.environ, "HOME": str(tmp_path_factory.mktemp(f"{name}-store"))}
    link_releases(built_once(adapter, f"lnk-{name}", env), release.store())
    done = subprocess.run(adapter, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, f"lnk-{name} install failed: {done.stderr or done.stdout}"
    return name


def test_an_outside_harness_answers_in_the_sandbox_through_the_proxy_and_never_holds_the_key(
    world: World, harness: str
) -> None:
    world.lnk("agent", "keys", "set", "openai", "boxed", "--stdin", input=world.key)
    world.lnk("agent", "start", "boxed", "--harness", "link")
    before = world.agent("boxed").settings
    switched = world.lnk("agent", "use", harness, "boxed", "--yes", timeout=600)
    assert f"boxed now runs {harness}" in switched.stderr
    # The first answer waits for the harness to start: OpenClaw's gateway takes a minute or more on
    # a loaded machine.
    answered = world.lnk("agent", "chat", "boxed", "-m", "hi", timeout=600).stdout
    assert answered.strip() == "ok"  # the stand-in's answer, through the harness
    request = world.provider.requests[-1]
    assert request.headers["authorization"] == f"Bearer {world.key}"  # added by the sandbox's proxy
    # The owner's message is the model's; a harness may add its own context after it (OpenClaw does).
    assert "hi" in json.dumps([m for m in request.json["messages"] if m["role"] == "user"][-2:])
    status = json.loads(world.lnk("agent", "status", "boxed", "--json").stdout)
    assert status["sandbox"] == "bubblewrap"
    agent = world.agent("boxed")
    home = agent.folder.harness_home(harness)
    assert (home / CONFIG[harness]).is_file() and (home / ".lnk-configured").is_file()
    shown = world.lnk("agent", harness, "show", "--agent", "boxed").stdout
    store = Path(sys.prefix) / "share" / f"lnk-{harness}"
    assert str(home) in shown and f"outside it: {store}" in shown
    for pid in descendants([world.harness_pid("boxed")]):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        assert world.key.encode() not in environ
    for path in agent.folder.root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert world.key.encode() not in path.read_bytes()

    back = world.lnk("agent", "use", "link", "boxed", "--yes", timeout=300)
    assert "boxed now runs link" in back.stderr
    after = world.agent("boxed").settings
    assert (after.channels, after.memory) == (before.channels, before.memory)
    assert world.chat("boxed", "hi again").strip() == "ok"
