"""6. The owner switches the agent to Hermes Agent, an outside harness: lnk-hermes installs on first
use from the signed release, Hermes itself (its pinned wheels, each checked) into lnk-hermes's
shared store, which the agent's sandboxed install links its home to; the owner's Telegram message
goes through Link's bridge to Hermes, whose answer comes back the same way; switching back to Link
Harness leaves the channels and memory as they were.

The store is built outside the sandbox, with the machine's pip: on this machine the registries
resolve to a documentation address (203.0.113.0/24), which the sandbox's proxy refuses by
construction, so an install inside the sandbox can't reach PyPI here (on a machine where PyPI
resolves to a public address it does, through the proxy, to the hosts lnk-hermes names)."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import AGENT

from lnk_e2e.machine import Machine
from lnk_e2e.model import Model
from lnk_e2e.phone import Phone


def test_hermes_answers_the_owner_on_telegram_through_links_bridge(
    machine: Machine, owner: Phone, model: Model
) -> None:
    before = machine.settings(AGENT)
    machine.lnk("agent", "stop", AGENT)
    switched = machine.lnk("agent", "use", "hermes", AGENT, "--yes", timeout=600)
    assert f"{AGENT} now runs hermes" in switched.stderr, switched.stderr
    assert "stop answering" not in switched.stderr  # Link's bridges carry every channel to Hermes
    adapter = Path(os.path.realpath(machine.root / "bin" / "lnk")).with_name("lnk-hermes")
    machine.run(str(adapter), "install", timeout=1800)  # the shared store, once per release
    machine.lnk("agent", "start", AGENT, timeout=600)

    said = owner.ask(model, "Hello from Telegram to Hermes", calls=1)
    assert said.answer == "You said: Hello from Telegram to Hermes"
    assert len(owner.showing(said.answer)) == 1
    home = machine.folder(AGENT) / "Harnesses" / "hermes"
    assert (home / "hermes" / "config.yaml").is_file() and (home / "hermes-agent").is_symlink()
    assert machine.status(AGENT)["sandbox"] == "bubblewrap"

    machine.lnk("agent", "use", "link", AGENT, "--yes", timeout=600)
    after = machine.settings(AGENT)
    assert (after.get("channels"), after.get("memory")) == (before.get("channels"), before.get("memory"))
    again = owner.ask(model, "Hello again, Link Harness", calls=1)
    assert again.answer == "You said: Hello again, Link Harness"
