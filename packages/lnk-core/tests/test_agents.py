"""An agent's life: start, chat, status, list, stop, restart, crash, foreground, delete, logs."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import reading
from world import World, process_gone, wait_until

from link_plugin.layout import HOME_FOLDERS
from lnk.agents import ENV_PORTS_FROM
from lnk.ports import choose_block, port_free


def test_first_start_makes_main_and_it_answers_in_the_terminal(main_ports: None, world: World) -> None:
    world.lnk("agent", "keys", "set", "openai", "--stdin", input=world.key)
    started = world.lnk("agent", "start", "--harness", "mini", "--no-sandbox")
    assert "lnk agent chat" in started.stderr
    main = world.agent("main")
    assert re.fullmatch(r"[a-z0-9]{12}", main.id)
    assert re.fullmatch(r".+@.+", main.settings.owner)
    assert main.settings.harness == "mini"
    assert main.settings.model == "gpt-6-luna"  # Link's default for the provider it has a key for
    assert main.settings.ports == [18790, 18791]  # main keeps the adapter's usual port, and one more
    for folder in HOME_FOLDERS:
        assert (main.folder.home / folder).is_dir()
    assert main.folder.chats.is_dir()

    world.provider.script(lambda _: __import__("link_conformance").Reply(text="Hello, I'm main.", chunks=5))
    answer = world.chat("main", "hi")
    assert answer.strip() == "Hello, I'm main."
    request = world.provider.requests[-1]
    assert request.json["messages"][-1]["content"] == "hi"
    assert request.json["model"] == "gpt-6-luna"
    assert request.headers["authorization"] == f"Bearer {world.key}"  # added on the way, never by the harness


@reading
def test_status_and_list_say_how_each_agent_is(started: World) -> None:
    started.lnk("agent", "keys", "set", "anthropic", "idle", "--stdin", input="sk-ant-x")
    status = json.loads(started.lnk("agent", "status", "work", "--json").stdout)
    assert status["running"] is True
    assert status["harness"] == "mini"
    assert status["model"] == "gpt-6-luna" and status["provider"] == "openai"
    assert status["sandbox"] == "none"
    assert status["endpoint"] == f"http://127.0.0.1:{status['ports'][0]}/v1"
    assert status["process"]["state"] == "running"
    assert status["memory"]["engine"] is None
    # This start runs without a sandbox (sandbox "none"), and the agent's grants are still shown:
    # they hold at its next sandboxed start.
    assert status["grants"]["permissions"]["network"] is True and status["grants"]["tcp"] == []
    text = started.lnk("agent", "status", "work").stdout
    assert "running" in text and "no sandbox" in text and "gpt-6-luna" in text

    listed = {a["name"]: a for a in json.loads(started.lnk("agent", "list", "--json").stdout)}
    assert listed["work"]["running"] is True
    assert listed["idle"]["running"] is False
    assert listed["idle"]["id"] != listed["work"]["id"]
    table = started.lnk("agent", "list").stdout
    assert "work" in table and "idle" in table
    assert "harness is running" in started.lnk("agent", "logs", "work").stdout
    assert "Nothing logged" in started.lnk("agent", "logs", "work", "--bridge", "telegram").stderr


LISTED_THEN_STATUS = """
import contextlib, io, json, sys
from lnk import cli
for args in (["agent", "list"], ["agent", "status", "idle"]):
    sys.argv = ["lnk", *args]
    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.suppress(SystemExit):
        cli.main()
    print(json.dumps([said.getvalue(), sorted(sys.modules)]))
"""


def test_list_and_status_load_no_other_command_nor_what_only_a_running_agent_needs(world: World) -> None:
    """`lnk agent list` and `status` of an agent not running are read from its files: the modules of
    other command groups, the HTTP client and the control socket's client stay unloaded (each is a
    tenth of a second of every such command)."""
    world.lnk("agent", "keys", "set", "anthropic", "idle", "--stdin", input="sk-ant-x")
    command = [sys.executable, "-c", LISTED_THEN_STATUS]
    done = subprocess.run(command, env=world.env, capture_output=True, text=True, timeout=60, check=True)
    (table, listed), (status, shown) = (json.loads(line) for line in done.stdout.splitlines())
    assert "idle" in table and "stopped" in table
    assert "idle" in status and "stopped" in status
    others = [f"lnk.commands.{group}" for group in ("sandbox", "keys", "model", "bucket", "move", "channels", "memory")]
    for modules in (listed, shown):
        for unrelated in (*others, "lnk.prepare", "lnk.control", "lnk.channels", "httpx", "h11", "asyncio"):
            assert unrelated not in modules
    for needed_by_status_only in ("lnk.scheduler", "lnk.sandboxing"):
        assert needed_by_status_only not in listed and needed_by_status_only in shown


def test_every_agent_but_main_gets_its_own_block_from_20000(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a person's machine, where LNK_PORTS_FROM is unset (the starts below set it: `world`)."""
    monkeypatch.delenv(ENV_PORTS_FROM, raising=False)
    lowest = next(port for port in range(20000, 21000) if port_free(port) and port_free(port + 1))
    one = choose_block("one", 2, 18790, [], [])
    assert one == [lowest, lowest + 1]  # the lowest free block from 20000
    two = choose_block("two", 2, 18790, [], [one])
    assert two[0] > one[-1]  # none another agent holds
    assert choose_block("main", 2, 18790, [], [one, two]) == [18790, 18791]  # main keeps its harness's


def test_blocks_start_where_lnk_ports_from_says(world: World) -> None:
    world.start("one")
    first = world.agent("one").settings.ports
    assert first == [world.ports_from, world.ports_from + 1]  # the harness's one port, and one more
    world.lnk("agent", "stop", "one")
    world.lnk("agent", "use", "wide", "one")
    world.lnk("agent", "start", "one", "--no-sandbox")
    grown = world.agent("one").settings.ports
    assert grown == list(range(first[0], first[0] + 4))  # a harness taking 3: grown at the same first port
    assert world.harness_settings("one").ports == grown[:3]
    world.start("two")
    two = world.agent("two").settings.ports
    assert len(two) == 2 and min(two) >= world.ports_from and not set(grown) & set(two)


def test_a_crashed_harness_is_started_again_and_stop_ends_everything(world: World) -> None:
    world.start("work")
    first = world.harness_pid("work")
    supervisor = world.state("work").pid
    os.kill(first, signal.SIGKILL)
    wait_until(
        lambda: (
            world.state("work").children["harness"].state == "running"
            and world.state("work").children["harness"].pid != first
        ),
        what="the harness starting again",
    )
    assert world.state("work").children["harness"].restarts == 1
    assert world.chat("work", "still there?").strip() == "ok"
    second = world.harness_pid("work")

    assert "stopped" in world.lnk("agent", "stop", "work").stderr
    assert process_gone(supervisor) and process_gone(second)
    assert json.loads(world.lnk("agent", "status", "work", "--json").stdout)["running"] is False
    assert "wasn't running" in world.lnk("agent", "stop", "work").stderr

    world.lnk("agent", "restart", "work", "--no-sandbox")
    assert world.chat("work", "back?").strip() == "ok"


def test_a_harness_killed_again_and_again_is_started_again_at_once_every_time(world: World) -> None:
    world.start("work")
    for restarts in (1, 2, 3):
        killed = world.harness_pid("work")
        os.kill(killed, signal.SIGKILL)
        wait_until(
            lambda killed=killed, restarts=restarts: (
                world.state("work").children["harness"].state == "running"
                and world.state("work").children["harness"].pid != killed
                and world.state("work").children["harness"].restarts == restarts
            ),
            what=f"the harness starting again after kill {restarts}",
        )
        assert world.chat("work", f"back after {restarts}?").strip() == "ok"
    said = world.lnk("agent", "logs", "work").stdout
    # A harness that answered is never made to wait: its owner may be waiting for an answer.
    assert said.count("harness ended (exit -9); starting it again\n") == 3, said
    assert "starting it again in" not in said


def test_foreground_runs_everything_in_one_tree_until_ctrl_c(world: World) -> None:
    world.lnk("agent", "keys", "set", "openai", "fg", "--stdin", input=world.key)
    process = subprocess.Popen(
        [sys.executable, "-m", "lnk", "agent", "start", "fg", "--harness", "mini", "--no-sandbox", "--foreground"],
        env=world.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def running() -> bool:
            return world.agent("fg").run.state("harness").exists() and world.state("fg").state == "running"

        # As long as lnk itself waits for a start (LNK_START_TIMEOUT), and the imports before it.
        wait_until(running, timeout=60, what="the foreground start")
        harness = world.harness_pid("fg")
        parent = int(Path(f"/proc/{harness}/stat").read_text().rsplit(")", 1)[1].split()[1])
        assert parent == process.pid  # the harness is a child of the terminal's lnk
        assert world.chat("fg", "hello").strip() == "ok"
        process.send_signal(signal.SIGINT)
        process.wait(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0
    assert process_gone(harness)
    assert world.state("fg").state == "stopped"


def test_delete_asks_without_a_terminal_and_keeps_the_files_unless_told(world: World) -> None:
    world.start("gone")
    agent = world.agent("gone")
    (agent.folder.home / "work" / "draft.md").write_text("mine")
    refused = world.lnk("agent", "delete", "gone", ok=False)
    assert "--yes" in refused.stderr
    assert agent.config.settings.exists()

    pid = world.harness_pid("gone")
    tools = world.layout.config / "tools"
    assert (tools / f"scheduler-{agent.id}.toml").exists()  # Link's own tools for it, defined at its start
    world.lnk("agent", "delete", "gone", "--yes")
    assert process_gone(pid)
    assert not list(tools.glob(f"*-{agent.id}.toml"))
    assert not agent.config.root.exists() and not agent.folder.root.exists()
    kept = world.layout.agents / ".kept" / f"gone-{agent.id}" / "Home" / "work" / "draft.md"
    assert kept.read_text() == "mine"
    assert "gone" not in world.lnk("agent", "list").stdout

    world.lnk("agent", "keys", "set", "openai", "second", "--stdin", input=world.key)
    second = world.agent("second")
    (second.folder.home / "work" / "x.md").write_text("x")
    world.lnk("agent", "delete", "second", "--yes", "--files")
    assert not (world.layout.agents / ".kept" / f"second-{second.id}").exists()


def test_every_agent_command_is_known_before_the_command_line_loads() -> None:
    """`lnk agent <harness> <verb>` is read before typer loads, by knowing the agent commands: one
    left out would have `lnk agent cancel show` taken as the harness `cancel` asked to `show`."""
    import typer.main

    from lnk.cli import AGENT_COMMANDS
    from lnk.commands.agent import app

    group = typer.main.get_command(app)
    assert set(group.list_commands(typer.Context(group))) == AGENT_COMMANDS  # type: ignore[attr-defined]
