"""`lnk agent <harness> show | remove`: a harness's home for an agent, and the release outside it
that its adapter's shared store holds, linked from each home running it. A release goes with its
last user; nothing else a home links to is ever removed: the harness writes its home, links
included, and a link it made to the owner's files must not turn `remove` against them."""

from __future__ import annotations

from pathlib import Path

import pytest
from world import World

from link_plugin.store import MARK, variable


@pytest.fixture
def release(world: World) -> Path:
    """Hermes Agent's release in a store of the world's, as lnk-hermes's install leaves it."""
    store = world.root / "store"
    world.env[variable("lnk-hermes")] = str(store)
    release = store / "hermes-agent-0.19.0"
    (release / "bin").mkdir(parents=True)
    (release / "bin" / "python").write_bytes(b"\0" * 100_000)
    (release / MARK).write_text("sha256:pin")
    return release


def _home(world: World, name: str, release: Path) -> Path:
    world.lnk("agent", "keys", "set", "openai", name, "--stdin", input=world.key)
    home = world.agent(name).folder.harness_home("hermes")
    (home / "hermes").mkdir(parents=True)
    (home / "hermes" / "config.yaml").write_text("model: link\n")
    (home / "hermes-agent").symlink_to(release, target_is_directory=True)
    return home


def test_a_shared_release_is_shown_and_goes_only_with_its_last_user(world: World, release: Path) -> None:
    one, two = _home(world, "one", release), _home(world, "two", release)
    shown = world.lnk("agent", "hermes", "show", "--agent", "one").stdout
    assert str(one) in shown and f"outside it: {release}" in shown and "also used by two" in shown

    kept = world.lnk("agent", "hermes", "remove", "--agent", "one").stderr
    assert not one.exists() and release.is_dir()
    assert f"Kept {release}: two use it." in " ".join(kept.split())
    world.lnk("agent", "hermes", "remove", "--agent", "two")
    assert not two.exists() and not release.exists()


def test_a_link_the_harness_made_to_anything_else_is_neither_shown_nor_removed(world: World, release: Path) -> None:
    home = _home(world, "one", release)
    owners = world.root / "Documents"  # the owner's files, and a folder shaped like a store's release
    owners.mkdir()
    (owners / "taxes.pdf").write_bytes(b"%PDF")
    fake = release.parent / "not-a-release"
    fake.mkdir()
    (home / "hermes" / "docs").symlink_to(owners, target_is_directory=True)
    (home / "hermes" / "other").symlink_to(fake, target_is_directory=True)
    (home / "hermes" / "up").symlink_to(home.parent.parent, target_is_directory=True)

    shown = world.lnk("agent", "hermes", "show", "--agent", "one").stdout
    assert "outside it" in shown and str(owners) not in shown and str(fake) not in shown
    world.lnk("agent", "hermes", "remove", "--agent", "one")
    assert not home.exists() and not release.exists()  # its release went with it (no other user)
    assert (owners / "taxes.pdf").read_bytes() == b"%PDF" and fake.is_dir()
    assert world.agent("one").folder.root.is_dir()
