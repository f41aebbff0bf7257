"""What a sandbox gives, tried from inside: allowed hosts answer, granted permissions work, its own
folders and ports are there, its tools and its model are reached, and the key stays outside."""

from __future__ import annotations

import json
import os
import socket
import sys
import sysconfig
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import MAIN_ID
from helpers import Internet, Link, Ran, ToolBridge, Website, free_port
from lnk_sandbox.policy import interpreter_paths

from link_conformance.provider import StandInProvider
from link_plugin.errors import LinkError
from link_plugin.keys import KeyStore
from link_plugin.layout import Layout

KEY = "sk-live-key-outside"
PYTHON = os.path.normpath(sys.executable)
"""This environment's Python, which a test shows inside a sandbox (with its packages) to run a real client."""
VENV = os.path.normpath(sys.prefix)
INTERNET = {"allowed.example": "93.184.215.14", "api.example.org": "93.184.215.20", "git.example": "93.184.215.21"}


@pytest.fixture
def site() -> Iterator[Website]:
    found = Website()
    yield found
    found.close()


def internet(site: Website) -> Internet:
    routes = {(address, port): site.port for address in INTERNET.values() for port in (80, 443, 22)}
    return Internet(INTERNET, routes)


def test_an_allowed_host_answers(link: Link, site: Website) -> None:
    link.grants("main", 'hosts = ["allowed.example"]\n')
    ran = link.sh("curl -sS http://allowed.example/hello", network=internet(site))
    assert ran.out == "page for allowed.example at /hello", ran


def test_a_host_under_a_listed_domain_answers(link: Link, site: Website) -> None:
    link.grants("main", 'hosts = ["*.example.org"]\n')
    ran = link.sh("curl -sS http://api.example.org/", network=internet(site))
    assert ran.out == "page for api.example.org at /", ran


def test_https_goes_through_a_tunnel(link: Link, site: Website) -> None:
    ran = link.sh("curl -sS -p http://allowed.example:443/tunnelled", network=internet(site))
    assert ran.out == "page for allowed.example:443 at /tunnelled", ran


def test_a_named_endpoint_answers(link: Link, site: Website) -> None:
    link.grants("main", 'tcp = ["git.example:22"]\n')
    ran = link.sh("curl -sS -p http://git.example:22/", network=internet(site))
    assert ran.out == "page for git.example:22 at /", ran


def test_localhost_opens_this_machines_ports_through_the_proxy(link: Link, site: Website) -> None:
    link.grants("main", 'allow = ["localhost"]\n')
    ran = link.sh(f"echo no_proxy=$no_proxy; curl -sS http://127.0.0.1:{site.port}/local")
    assert ran.out == f"no_proxy=\npage for 127.0.0.1:{site.port} at /local", ran


def test_lan_gives_the_network_as_it_is(link: Link, site: Website) -> None:
    link.grants("main", 'allow = ["lan"]\n')
    ran = link.sh(f"echo proxy=${{HTTP_PROXY:-none}}; curl -sS http://127.0.0.1:{site.port}/lan")
    assert ran.out == f"proxy=none\npage for 127.0.0.1:{site.port} at /lan", ran


def test_read_home_shows_the_home_read_only(link: Link) -> None:
    assert link.sh(f"cat {link.home}/notes.txt").code != 0
    link.grants("main", 'allow = ["read-home"]\n')
    assert link.sh(f"cat {link.home}/notes.txt").out == "the owner's own file\n"
    assert link.sh(f"echo changed > {link.home}/notes.txt").code != 0
    assert (link.home / "notes.txt").read_text() == "the owner's own file\n"


def test_developer_tools_show_the_toolchains_and_their_denial_hides_them(link: Link) -> None:
    shown = sorted(os.listdir("/usr/local"))
    assert link.sh("ls /usr/local").out.split() == shown
    link.grants("main", 'deny = ["developer-tools"]\n')
    assert link.sh("ls /usr/local").out.split() == []


def test_open_shows_the_desktop_session(link: Link) -> None:
    runtime = link.root / "run"
    runtime.mkdir()
    bus = socket.socket(socket.AF_UNIX)
    bus.bind(str(runtime / "bus"))
    bus.listen(4)
    try:
        link.environ |= {"XDG_RUNTIME_DIR": str(runtime), "DBUS_SESSION_BUS_ADDRESS": f"unix:path={runtime}/bus"}
        connect = "import os, socket; socket.socket(socket.AF_UNIX).connect(os.environ['XDG_RUNTIME_DIR'] + '/bus')"
        assert link.run(["python3", "-c", connect]).code != 0
        link.grants("main", 'allow = ["open"]\n')
        ran = link.run(["python3", "-c", connect + "; print(os.environ['DBUS_SESSION_BUS_ADDRESS'])"])
        assert ran.code == 0 and ran.out.strip() == f"unix:path={runtime}/bus", ran
    finally:
        bus.close()


def test_the_harness_home_is_its_home_and_writable(link: Link) -> None:
    ran = link.sh('cd && echo installed > "$HOME/state" && pwd')
    harness_home = link.layout.agent("main").harness_home("mini")
    assert ran.out.strip() == str(harness_home)
    assert (harness_home / "state").read_text() == "installed\n"


def test_chats_are_writable_only_to_a_harness_that_says_so(link: Link) -> None:
    chats = link.layout.agent("main").chats
    assert link.sh(f"echo hi > {chats}/a.md").code != 0
    assert link.sh(f"echo hi > {chats}/a.md", writes=[str(chats)]).code == 0
    assert (chats / "a.md").read_text() == "hi\n"


def test_home_is_wholly_writable_to_a_harness_that_writes_it(link: Link) -> None:
    home = link.layout.agent("main").home
    link.grants("main", '[files]\nread = ["instructions"]\n')
    ran = link.sh(f"echo top > {home}/top.md && echo rule > {home}/instructions/rule.md", writes=[str(home)])
    assert ran.code == 0 and (home / "instructions" / "rule.md").exists()


def test_home_folders_are_writable_and_instructions_can_be_kept_read_only(link: Link) -> None:
    folder = link.layout.agent("main")
    link.grants("main", '[files]\nread = ["instructions"]\n')
    ran = link.sh(f"echo note > {folder.home}/work/n.md && cat {folder.instructions}/../work/n.md")
    assert ran.out == "note\n"


def test_the_agents_port_is_published_for_the_bridge(link: Link) -> None:
    port = free_port()
    serve = (
        "import http.server\n"
        "class H(http.server.BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        self.send_response(200); self.send_header('Content-Length', '6'); self.end_headers()\n"
        "        self.wfile.write(b'inside')\n"
        f"http.server.HTTPServer(('127.0.0.1', {port}), H).handle_request()\n"
    )
    done: list[Ran] = []
    runner = threading.Thread(target=lambda: done.append(link.run(["python3", "-c", serve], ports=[port])))
    runner.start()
    deadline = time.monotonic() + 20
    answer = b""
    while not answer and time.monotonic() < deadline:
        try:
            answer = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read()
        except OSError:
            time.sleep(0.05)
    runner.join(timeout=20)
    assert answer == b"inside" and done[0].code == 0, done


def test_a_local_model_server_is_reached_at_its_port(link: Link, site: Website) -> None:
    ran = link.sh(f"curl -sS http://127.0.0.1:{site.port}/v1/models", model_port=site.port)
    assert ran.out == f"page for 127.0.0.1:{site.port} at /v1/models", ran


def test_tools_reach_the_tool_bridge_through_the_proxy(link: Link) -> None:
    tool = f"memory-{MAIN_ID}"
    bridge = ToolBridge(link.layout.tools_socket(MAIN_ID), [tool])
    client = (
        "import asyncio, os\n"
        "from mcp import Client\n"
        "async def main():\n"
        f"    async with Client(os.environ['LNK_PROXY'] + '/_link/tools/{tool}/mcp') as c:\n"
        "        names = [t.name for t in (await c.list_tools()).tools]\n"
        f"        answer = await c.call_tool('{tool}_ping', {{'text': 'hi'}})\n"
        "        print(names, answer.content[0].text)\n"
        "asyncio.run(main())\n"
    )
    try:
        ran = link.run([PYTHON, "-c", client], reads=[VENV], tools=[tool])
    finally:
        bridge.close()
    assert ran.out.strip() == f"['{tool}_ping'] {tool} pong hi", ran
    assert f'"tool": "{tool}"' in link.log()


def test_the_proxy_adds_the_model_key_and_the_harness_never_holds_it(link: Link) -> None:
    KeyStore(link.layout.agent_config("main").keys).set("openai", KEY)
    body = json.dumps({"model": "gpt-6-luna", "messages": [{"role": "user", "content": "hi"}]})
    with StandInProvider(key=KEY) as provider:
        ran = link.sh(
            f"env; curl -sS -H 'Authorization: Bearer placeholder' -H 'Content-Type: application/json' "
            f"-d '{body}' http://api.openai.com/v1/chat/completions",
            environ={"LNK_UPSTREAM_OPENAI": provider.origin},
        )
        assert provider.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert '"content":"ok"' in ran.out.replace(" ", ""), ran
    assert KEY not in ran.out
    assert '"provider": "openai", "key": true' in link.log()


def test_a_real_openai_client_inside_reaches_its_model_through_the_proxy(link: Link) -> None:
    KeyStore(link.layout.agent_config("main").keys).set("openai", KEY)
    client = (
        "import openai\n"
        "c = openai.OpenAI(base_url='http://api.openai.com/v1', api_key='placeholder', max_retries=0)\n"
        "answer = c.chat.completions.create(model='gpt-6-luna', messages=[{'role': 'user', 'content': 'hi'}])\n"
        "print(answer.choices[0].message.content)\n"
    )
    with StandInProvider(key=KEY) as provider:
        ran = link.run([PYTHON, "-c", client], reads=[VENV], environ={"LNK_UPSTREAM_OPENAI": provider.origin})
    assert ran.out.strip() == "ok", ran


def test_anthropic_and_openrouter_get_their_keys_in_their_own_headers(link: Link) -> None:
    keys = KeyStore(link.layout.agent_config("main").keys)
    keys.set("anthropic", "sk-ant")
    keys.set("openrouter", "sk-or")
    messages = json.dumps(
        {"model": "claude-sonnet-5-5", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    )
    chat = json.dumps({"model": "openrouter/auto", "messages": [{"role": "user", "content": "hi"}]})
    with StandInProvider() as provider:
        ran = link.sh(
            f"curl -sS -d '{messages}' http://api.anthropic.com/v1/messages; echo;"
            f"curl -sS -d '{chat}' http://openrouter.ai/api/v1/chat/completions",
            environ={"LNK_UPSTREAM_ANTHROPIC": provider.origin, "LNK_UPSTREAM_OPENROUTER": f"{provider.origin}/v1"},
        )
        first, second = provider.requests
    assert ran.code == 0, ran
    assert first.path == "/v1/messages" and first.headers["x-api-key"] == "sk-ant"
    assert second.path == "/v1/chat/completions" and second.headers["authorization"] == "Bearer sk-or"


def test_keys_not_wired_leave_the_harness_its_own(link: Link) -> None:
    KeyStore(link.layout.agent_config("main").keys).set("openai", KEY)
    body = json.dumps({"model": "gpt-6-luna", "messages": [{"role": "user", "content": "hi"}]})
    with StandInProvider(key="its-own") as provider:
        link.sh(
            f"curl -sS -H 'Authorization: Bearer its-own' -d '{body}' http://api.openai.com/v1/chat/completions",
            environ={"LNK_UPSTREAM_OPENAI": provider.origin},
            wire_keys=False,
        )
        assert provider.requests[0].headers["authorization"] == "Bearer its-own"


def test_the_commands_exit_code_comes_back(link: Link) -> None:
    assert link.sh("exit 7").code == 7


def test_a_pipelines_writer_ends_quietly_once_its_reader_is_gone(link: Link) -> None:
    """The command gets SIGPIPE as any program does, though the relay starting it is Python, which
    ignores it for itself: `yes` ends on it rather than complaining of a broken pipe."""
    ran = link.sh("yes | head -n 1")
    assert ran.out == "y\n" and ran.err == "", ran


def test_what_the_command_left_running_may_clean_up_before_the_sandbox_ends(link: Link) -> None:
    """A server the command started (memory's engine, started by its session) is asked to end and
    removes its socket, rather than being killed with the sandbox and leaving it behind."""
    state = link.layout.agent("main").memory_state("link")
    state.mkdir(parents=True)
    server = f"trap 'echo cleaned up > {state}/ended; exit 0' TERM; sleep 30 & wait"
    ran = link.sh(f'sh -c "{server}" & sleep 0.5; exit 3', mode="tool", harness=None, writes=[str(state)])
    assert ran.code == 3, ran
    assert (state / "ended").read_text() == "cleaned up\n"


def test_each_connection_is_logged(link: Link, site: Website) -> None:
    link.grants("main", 'hosts = ["allowed.example"]\n')
    link.sh("curl -sS http://allowed.example/; curl -sS http://10.1.2.3/", network=internet(site))
    lines = [json.loads(line) for line in link.log().splitlines()]
    assert {"kind": "http", "host": "allowed.example", "port": 80, "allowed": True}.items() <= lines[0].items()
    assert lines[1]["allowed"] is False and lines[1]["host"] == "10.1.2.3" and "isn't one of" in lines[1]["reason"]


def test_a_tool_reads_and_writes_only_what_it_is_given(link: Link, site: Website) -> None:
    folder = link.layout.agent("main")
    state = folder.memory_state("link")
    state.mkdir(parents=True)
    (folder.home / "work" / "doc.md").write_text("a document\n")
    script = (
        f"cat {folder.home}/work/doc.md && echo index > {state}/index.db && echo note > {folder.memory}/notes.md;"
        f"echo x > {folder.home}/work/evil.md; echo work=$?;"
        f"curl -sS http://127.0.0.1:{site.port}/embed; echo; echo proxy=${{HTTP_PROXY:-none}}"
    )
    ran = link.sh(
        script,
        mode="tool",
        harness=None,
        reads=[str(folder.home)],
        writes=[str(state), str(folder.memory)],
        model_port=site.port,
    )
    assert ran.out.splitlines() == [
        "a document",
        "work=2",
        f"page for 127.0.0.1:{site.port} at /embed",
        "proxy=none",
    ], ran
    assert (state / "index.db").exists() and (folder.memory / "notes.md").exists()
    assert not (folder.home / "work" / "evil.md").exists()


def test_setup_reaches_only_the_adapters_hosts(link: Link, site: Website) -> None:
    link.grants("main", 'hosts = ["api.example.org"]\n')
    ran = link.sh(
        "curl -sS -o /dev/null -o /dev/null -w '%{http_code} ' http://allowed.example/ http://api.example.org/",
        mode="setup",
        hosts=["allowed.example"],
        network=internet(site),
    )
    assert ran.out.split() == ["200", "403"], ran


def test_health_reaches_only_the_harness_ports(link: Link, site: Website) -> None:
    ran = link.sh(
        f"curl -sS http://127.0.0.1:{site.port}/health; echo; echo proxy=${{HTTP_PROXY:-none}}",
        mode="health",
        ports=[site.port],
    )
    assert ran.out.splitlines() == [f"page for 127.0.0.1:{site.port} at /health", "proxy=none"], ran


def test_a_deep_settings_folder_still_gets_its_sockets(link: Link, site: Website) -> None:
    deep = link.root / ("d" * 40) / ("e" * 40)
    (deep / "agents").mkdir(parents=True)
    os.rename(link.layout.agent_config("main").root, deep / "agents" / "main")
    layout = Layout(config=deep, agents=link.layout.agents)
    assert len(str(layout.net(MAIN_ID) / "harness-1234567-abcdef" / "out" / "proxy.sock")) > 107
    ran = link.run(["curl", "-sS", "http://allowed.example/deep"], layout=layout, network=internet(site))
    assert ran.out == "page for allowed.example at /deep", ran


def test_a_tool_holds_its_owners_agents_together_never_another_owners(link: Link) -> None:
    link.agent("theirs", "theiragent01", owner="someone@else")
    other, theirs = link.layout.agent("other").home, link.layout.agent("theirs").home
    ran = link.sh(f"cat {other}/work/secret.txt", mode="tool", harness=None, reads=[str(other)])
    assert ran.out == "other agent's secret\n", ran
    with pytest.raises(LinkError, match="another agent's folder"):
        link.sh(f"ls {theirs}", mode="tool", harness=None, reads=[str(theirs)])
    with pytest.raises(LinkError, match="another agent's folder"):
        link.sh(f"ls {other}", reads=[str(other)])


def test_the_interpreters_shared_library_is_the_one_its_build_names() -> None:
    """What the relay's Python needs is found from what this process loaded: the same paths its
    build's configuration gives."""
    expected = [Path(sys.executable).resolve(), Path(os.__file__).resolve().parent]
    if sysconfig.get_config_var("Py_ENABLE_SHARED"):
        expected.append((Path(sysconfig.get_config_var("LIBDIR")) / sysconfig.get_config_var("INSTSONAME")).resolve())
    assert interpreter_paths() == expected
