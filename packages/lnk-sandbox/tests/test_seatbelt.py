"""macOS: the same policy as a Seatbelt profile. It can't run here, so its text is what is tested,
and Link's mktemp, a plain shell script, runs here against this machine's mktemp."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from helpers import Link
from lnk_sandbox import seatbelt
from lnk_sandbox.policy import Context, Policy, build
from lnk_sandbox.request import Request
from lnk_sandbox.standing import Standing

from link_plugin.layout import Layout
from link_plugin.sandbox import SandboxRequest


def policy(link: Link, **fields: object) -> Policy:
    layout: Layout = link.layout
    request = SandboxRequest.model_validate({"agent": "main", "harness": "mini", "argv": ["run-it"], **fields})
    context = Context(layout, Standing.of(layout, "main", "mini"), link.environ)
    return build(Request.of(request), context, macos=True)


def test_everything_is_denied_but_what_is_allowed(link: Link) -> None:
    text = seatbelt.profile(policy(link))
    assert text.startswith("(version 1)\n(deny default)\n")
    assert "(allow network*)" not in text


def test_the_only_connection_out_is_the_proxys_loopback_port(link: Link) -> None:
    text = seatbelt.profile(policy(link, proxy_port=20001, ports=[20000], model_port=11434))
    outbound = [line for line in text.splitlines() if "network-outbound" in line]
    assert outbound == [
        '(allow network-outbound (remote tcp "localhost:20001"))',
        '(allow network-outbound (remote tcp "localhost:11434"))',
    ]
    assert '(allow network-bind network-inbound (local tcp "localhost:20000"))' in text


def test_lan_allows_the_network_as_it_is(link: Link) -> None:
    link.grants("main", 'allow = ["lan"]\n')
    assert "(allow network*)" in seatbelt.profile(policy(link))


def test_settings_and_other_agents_are_denied_after_the_home_and_its_own_folders_after_that(link: Link) -> None:
    link.grants("main", 'allow = ["read-home"]\n[files]\nread = ["instructions"]\n')
    lines = seatbelt.profile(policy(link, writes=[str(link.layout.agent("main").chats)])).splitlines()
    home = next(i for i, line in enumerate(lines) if f'(subpath "{link.home.resolve()}")' in line)
    hidden = next(i for i, line in enumerate(lines) if line.startswith("(deny file-read* file-write*"))
    own = next(
        i for i, line in enumerate(lines) if line.startswith("(allow file-read* file-write*") and "Harnesses" in line
    )
    assert home < hidden < own
    assert str(link.layout.config.resolve()) in lines[hidden] and str(link.layout.agents.resolve()) in lines[hidden]
    instructions = str(link.layout.agent("main").instructions.resolve())
    assert f'(subpath "{instructions}")' not in lines[own]


def test_developer_tools_open_xcode_and_their_denial_closes_them(link: Link) -> None:
    assert "/Applications/Xcode.app" in seatbelt.profile(policy(link))
    link.grants("main", 'deny = ["developer-tools"]\n')
    assert "/Applications/Xcode.app" not in seatbelt.profile(policy(link))


def test_open_allows_launch_services(link: Link) -> None:
    assert "(allow lsopen)" not in seatbelt.profile(policy(link))
    link.grants("main", 'allow = ["open"]\n')
    assert "(allow lsopen)" in seatbelt.profile(policy(link))


def test_a_path_with_quotes_is_escaped(link: Link) -> None:
    odd = link.root / 'a "quoted" folder'
    odd.mkdir()
    assert '(subpath "' + str(odd).replace('"', '\\"') + '")' in seatbelt.profile(policy(link, reads=[str(odd)]))


def test_temporary_files_go_to_the_harness_home_with_links_mktemp_first(link: Link) -> None:
    found = policy(link)
    command = seatbelt.command(found)
    env = seatbelt.environment(found)
    home = link.layout.agent("main").harness_home("mini").resolve()
    assert command[:2] == ["/usr/bin/sandbox-exec", "-p"] and command[3:] == ["run-it"]
    assert env["TMPDIR"] == str(home / "tmp") and (home / "tmp").is_dir()
    assert env["PATH"].split(":")[0] == str(home / ".lnk" / "bin")
    assert os.access(home / ".lnk" / "bin" / "mktemp", os.X_OK)


def mktemp(link: Link, *args: str) -> str:
    found = policy(link)
    seatbelt.command(found)
    script = seatbelt.bin_folder(found) / "mktemp"
    env = {**os.environ, "TMPDIR": str(seatbelt.tmpdir(found))}
    return subprocess.run([str(script), *args], capture_output=True, text=True, env=env, check=True).stdout.strip()


def test_mktemp_without_a_template_makes_it_in_tmpdir(link: Link) -> None:
    tmp = link.layout.agent("main").harness_home("mini").resolve() / "tmp"
    made = Path(mktemp(link, "-d"))
    assert made.parent == tmp and made.is_dir()
    assert Path(mktemp(link)).is_file() and Path(mktemp(link)).parent == tmp
    assert Path(mktemp(link, "-t", "uv")).name.startswith("uv.")


def test_mktemp_with_a_template_is_handed_on_as_it_is(link: Link) -> None:
    template = str(link.root / "mine.XXXXXX")
    assert Path(mktemp(link, template)).parent == link.root
