"""6. The owner switches the agent to an outside harness, Hermes Agent or OpenClaw: its adapter
(lnk-hermes, lnk-openclaw) installs on first use from the signed release, the harness itself (its
pinned wheels or npm packages, each checked) into the adapter's shared store, which the agent's
sandboxed install links its home to; the owner's Telegram message goes through Link's bridge to
the harness, whose answer comes back the same way, with the model key added by the sandbox's proxy
and held by nothing the harness runs; switching back to Link Harness leaves the channels and memory
as they were.

The store is built outside the sandbox, with the machine's pip or npm: on this machine the
registries resolve to a documentation address (203.0.113.0/24), which the sandbox's proxy refuses
by construction, so an install inside the sandbox can't reach them here (on a machine where they
resolve to a public address it does, through the proxy, to the hosts the adapter names). The
release is built from the registry by the machine's adapter the first time on the runner, into the
runner's cache (`~/.cache/lnk-<harness>`, `lnk_testing.stores`, which the packages' tests share),
and put into the machine's store as links; npm keeps what it downloaded in `~/.npm`. So a run after
the first installs nothing from the registry, and a fresh runner still does, once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import AGENT

from lnk_e2e import processes
from lnk_e2e.machine import Machine
from lnk_e2e.model import Model
from lnk_e2e.phone import Phone
from lnk_testing.stores import built_once, link_releases

RELEASE = {"hermes": ("hermes/config.yaml", "hermes-agent"), "openclaw": ("openclaw/openclaw.json", "openclaw-release")}
"""Per harness: its own config in its home, and the link to its release in the shared store."""


@pytest.mark.parametrize("harness", sorted(RELEASE))
def test_an_outside_harness_answers_the_owner_on_telegram_through_links_bridge(
    machine: Machine, owner: Phone, model: Model, model_key: str, harness: str
) -> None:
    before = machine.settings(AGENT)
    machine.lnk("agent", "stop", AGENT)
    switched = machine.lnk("agent", "use", harness, AGENT, "--yes", timeout=600)
    assert f"{AGENT} now runs {harness}" in switched.stderr, switched.stderr
    assert "stop answering" not in switched.stderr  # Link's bridges carry every channel to it
    adapter = Path(os.path.realpath(machine.root / "bin" / "lnk")).with_name(f"lnk-{harness}")
    npm_cache = os.environ.get("NPM_CONFIG_CACHE") or str(Path.home() / ".npm")
    machine.env["NPM_CONFIG_CACHE"] = npm_cache  # the runner's own download cache, kept between runs
    # The release from the registry, built by this adapter's own install the first time on this
    # machine, into the runner's cache; its files put into this machine's store as links.
    cache = built_once([str(adapter), "install"], f"lnk-{harness}", machine.env)
    store = adapter.parent.parent / "share" / f"lnk-{harness}"
    link_releases(cache, store)
    machine.run(str(adapter), "install", timeout=1800)  # finds the release whole in the store
    machine.lnk("agent", "start", AGENT, timeout=600)

    # The first message waits for the harness to finish starting: a minute or more for OpenClaw.
    asked = len(model.requests)
    said = owner.ask(model, f"Hello from Telegram to {harness}", calls=1, timeout=600)
    # The model echoes what the harness passed on: the owner's words, which OpenClaw wraps in its
    # own (the time, its runtime).
    assert said.answer.startswith("You said: ") and f"Hello from Telegram to {harness}" in said.answer
    assert len(owner.showing(said.answer)) == 1
    config, link = RELEASE[harness]
    home = machine.folder(AGENT) / "Harnesses" / harness
    assert (home / config).is_file() and (home / link).is_symlink()
    assert machine.status(AGENT)["sandbox"] == "bubblewrap"
    assert all(r.headers.get("authorization") == f"Bearer {model_key}" for r in model.requests[asked:])
    inside = processes.in_sandboxes(machine.status(AGENT)["process"]["pid"])
    assert inside and not [p.command for p in inside if p.mentions(model_key)]
    files = [p for p in machine.folder(AGENT).rglob("*") if p.is_file() and not p.is_symlink()]
    assert not [p for p in files if model_key.encode() in p.read_bytes()]
    shown = machine.lnk("agent", harness, "show", "--agent", AGENT).stdout
    assert str(home) in shown and f"outside it: {store}" in shown

    machine.lnk("agent", "use", "link", AGENT, "--yes", timeout=600)
    after = machine.settings(AGENT)
    assert (after.get("channels"), after.get("memory")) == (before.get("channels"), before.get("memory"))
    again = owner.ask(model, f"Hello again, Link Harness, after {harness}", calls=1)
    assert again.answer == f"You said: Hello again, Link Harness, after {harness}"
