"""Bad input gets a clear error saying what was wrong and what to do, and loses nothing."""

from __future__ import annotations

import os
import socket

from world import World


def test_a_malformed_settings_file_is_named_with_its_line(world: World) -> None:
    world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input=world.key)
    settings = world.agent("work").config.settings
    text = settings.read_text()
    settings.write_text(text + "hops = \n")
    broken = world.lnk("agent", "status", "work", ok=False)
    assert str(settings) in broken.stderr and "line" in broken.stderr
    settings.write_text(text.replace("hops = 4", 'hops = "many"'))
    wrong = world.lnk("agent", "start", "work", "--harness", "mini", "--no-sandbox", ok=False)
    line = next(n for n, row in enumerate(settings.read_text().splitlines(), 1) if row.startswith("hops"))
    assert f"{settings}, line {line}" in wrong.stderr and "hops" in wrong.stderr
    assert settings.read_text() == text.replace("hops = 4", 'hops = "many"')  # nothing was rewritten


def test_unknown_names_list_the_known_ones(world: World) -> None:
    world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input=world.key)
    agent = world.lnk("agent", "status", "nobody", ok=False)
    assert "no agent 'nobody'" in agent.stderr and "agents: work" in agent.stderr
    harness = world.lnk("agent", "use", "nosuch", "work", ok=False)
    assert "no harness 'nosuch'" in harness.stderr
    for known in ("link", "openclaw", "hermes", "deepseek", "mini"):
        assert known in harness.stderr
    reserved = world.lnk("agent", "use", "lnk-harness", "work", ok=False)
    assert "Link's programs" in reserved.stderr
    kind = world.lnk("agent", "use", "testchan", "work", ok=False)
    assert "lnk-testchan is a channel plugin, not a harness" in kind.stderr
    for name in ("lnk-agent", "link.x", "a/b", "-x"):
        assert world.lnk("agent", "keys", "set", "openai", name, "--stdin", input="k", ok=False).returncode != 0
    model = world.lnk("agent", "start", "work", "--harness", "mini", "--model", "llama", "--no-sandbox", ok=False)
    assert "which provider serves the model 'llama'" in model.stderr and "local/<name>" in model.stderr
    assert world.agent("work").settings.model is None


def test_a_start_without_a_model_says_how_to_give_it_one(world: World) -> None:
    world.lnk("agent", "use", "mini", "work", ok=False)  # no agent yet
    world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input="k")
    world.lnk("agent", "keys", "delete", "openai", "work")
    missing = world.lnk("agent", "start", "work", "--harness", "mini", "--no-sandbox", ok=False)
    assert "work has no model yet" in missing.stderr and "lnk agent keys set anthropic work" in missing.stderr


def test_a_port_in_use_names_the_program_holding_it(main_ports: None, world: World) -> None:
    world.lnk("agent", "keys", "set", "openai", "main", "--stdin", input=world.key)
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.bind(("127.0.0.1", 18791))  # the last of main's block with lnk-mini (18790, and one more)
        holder.listen()
        taken = world.lnk("agent", "start", "--harness", "mini", "--no-sandbox", ok=False)
    assert "Port 18791 of main's block (18790-18791) is in use" in taken.stderr
    assert f"(pid {os.getpid()})" in taken.stderr and "python" in taken.stderr


def test_settings_are_written_whole_by_rename(world: World) -> None:
    world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input=world.key)
    settings = world.agent("work").config.settings
    before = settings.stat().st_ino
    world.lnk("agent", "use", "mini", "work")
    assert settings.stat().st_ino != before  # a new file renamed over the old, never the old rewritten
    assert not [p for p in settings.parent.iterdir() if p.name.endswith(".tmp")]
    assert settings.stat().st_mode & 0o777 == 0o600


def test_chat_with_a_harness_that_has_no_endpoint_says_where_to_talk(world: World) -> None:
    world.start("quiet", harness="silent")
    said = world.lnk("agent", "chat", "quiet", "-m", "hi", ok=False)
    assert "answers no endpoint" in said.stderr and "lnk agent connect telegram quiet" in said.stderr
    assert world.spec("quiet").bridges == []


def test_a_port_base_that_is_no_port_says_what_to_set(world: World) -> None:
    world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input=world.key)
    world.env["LNK_PORTS_FROM"] = "twenty"
    refused = world.lnk("agent", "start", "work", "--harness", "mini", "--no-sandbox", ok=False)
    assert "LNK_PORTS_FROM='twenty' is not a port to start agents' blocks from" in refused.stderr
    assert "from 1024 to 65000, or unset it for 20000" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert not world.agent("work").settings.ports  # nothing kept from the refused start
