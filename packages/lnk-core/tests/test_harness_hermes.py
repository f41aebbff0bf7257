"""An outside harness through the contract: `lnk agent use hermes` runs Hermes Agent (lnk-hermes,
from adapters/) in the real sandbox, answering through its proxy, which adds the key Hermes never
holds; `lnk agent use link` switches back with the channels and memory as they were."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from world import World

from lnk.plugins import find
from lnk_testing.processes import descendants


def _sandboxes() -> bool:
    if shutil.which("bwrap") is None or find("lnk-sandbox") is None:
        return False
    probe = subprocess.run(["bwrap", "--unshare-all", "--ro-bind", "/", "/", "true"], capture_output=True)
    return probe.returncode == 0


pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("lnk_hermes") is None, reason="lnk-hermes (adapters/lnk-hermes) isn't installed"
    ),
    pytest.mark.skipif(not _sandboxes(), reason="bubblewrap can't make a sandbox here"),
]


def _link_tree(source: Path, target: Path) -> None:
    """`source` copied to `target` as hard links (a copy where links can't be made), renamed into
    place whole, as lnk-hermes itself puts a release in its store."""
    if target.exists():
        return

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    making = target.with_name(f"{target.name}.linking-{os.getpid()}")
    shutil.rmtree(making, ignore_errors=True)
    shutil.copytree(source, making, symlinks=True, copy_function=link)
    try:
        os.rename(making, target)
    except OSError:  # another process put it there first
        shutil.rmtree(making, ignore_errors=True)


@pytest.fixture(scope="module", autouse=True)
def store(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Hermes Agent in lnk-hermes's shared store (lnk's environment, which every sandbox reads),
    so each agent's install only links to it. Building it from PyPI takes minutes: it is built once
    per machine in the user's cache folder, where lnk-hermes's own tests keep theirs, and linked
    from there into a new environment's store, where `install` finds it whole and of this pin."""
    from lnk_hermes import release

    home = tmp_path_factory.mktemp("hermes-store")
    adapter = [str(Path(sys.executable).parent / "lnk-hermes"), "install"]
    env = {**os.environ, "HOME": str(home)}
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lnk-hermes"
    for store in (cache, release.store()):
        if store != cache:
            _link_tree(cache / release.folder_name(), store / release.folder_name())
        done = subprocess.run(
            adapter, env={**env, release.ENV_STORE: str(store)}, capture_output=True, text=True, timeout=1800
        )
        assert done.returncode == 0, f"lnk-hermes install failed (is PyPI reachable?): {done.stderr or done.stdout}"


def test_hermes_answers_in_the_sandbox_through_the_proxy_and_never_holds_the_key(world: World) -> None:
    world.lnk("agent", "keys", "set", "openai", "boxed", "--stdin", input=world.key)
    world.lnk("agent", "start", "boxed", "--harness", "link")
    before = world.agent("boxed").settings
    switched = world.lnk("agent", "use", "hermes", "boxed", "--yes", timeout=600)
    assert "boxed now runs hermes" in switched.stderr
    assert world.chat("boxed", "hi").strip() == "ok"  # the stand-in's answer, through Hermes
    request = world.provider.requests[-1]
    assert request.headers["authorization"] == f"Bearer {world.key}"  # added by the sandbox's proxy
    assert "hi" in json.dumps(request.json["messages"][-1])
    status = json.loads(world.lnk("agent", "status", "boxed", "--json").stdout)
    assert status["sandbox"] == "bubblewrap"
    agent = world.agent("boxed")
    home = agent.folder.harness_home("hermes")
    assert (home / "hermes" / "config.yaml").is_file() and (home / ".lnk-configured").is_file()
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
