"""What a harness needs, asked once in a terminal (a pty here) and kept; refused without one unless a
script says --yes; never no sandbox but by --allow-unsandboxed; risks asked the same way."""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from typing import Any

import pytest
from helpers import PROGRAM, Link, Ran, Terminal

from link_plugin.sandbox import Decision

LAN = {"name": "lan", "why": "its Slack sockets ignore the proxy"}
LOCALHOST = {"name": "localhost", "why": "it talks to a local database"}
NO_SANDBOX = {"name": "unsandboxed", "why": "its browser can't run in a sandbox"}
BROWSER = {
    "name": "browser",
    "why": "a managed browser on a port of its own",
    "optional": True,
    "without": "no browsing",
}
BRIDGE = {"name": "whatsapp-bridge", "why": "a bridge on the loopback that asks for no credential"}


def needs_file(link: Link, permissions: list[dict[str, Any]], risks: list[dict[str, Any]] | None = None) -> str:
    path = link.root / "needs.json"
    path.write_text(json.dumps({"permissions": permissions, "risks": risks or []}))
    return str(path)


def ask(link: Link, file: str, *flags: str) -> Ran:
    """`needs` with no terminal, as a script or a service runs it."""
    done = subprocess.run(
        [PROGRAM, "needs", "--agent", "main", "--harness", "mini", "--needs", file, *flags],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=link.environ,
        timeout=60,
    )
    return Ran(done.returncode, done.stdout, done.stderr)


def in_terminal(link: Link, file: str, *flags: str) -> Terminal:
    return Terminal([PROGRAM, "needs", "--agent", "main", "--harness", "mini", "--needs", file, *flags], link.environ)


def decision(ran: Ran) -> Decision:
    assert ran.code == 0, ran
    return Decision.model_validate_json(ran.out)


def kept(link: Link) -> dict[str, Any]:
    return tomllib.loads(link.layout.harness_grants("mini").read_text())


def test_a_new_need_is_asked_in_a_terminal_and_kept_with_the_need(link: Link) -> None:
    terminal = in_terminal(link, needs_file(link, [LAN]))
    seen = terminal.expect("Allow lan for mini? [y/N]")
    terminal.type("y")
    answer = decision(terminal.finish())
    assert "its Slack sockets ignore the proxy" in seen and "The network as it is" in seen
    assert "every agent here running mini: main, other" in seen
    assert answer.granted == ["lan"] and answer.asked
    assert kept(link)["allow"] == ["lan"] and kept(link)["needs"] == {"lan": LAN["why"]}


def test_an_answered_need_is_not_asked_again(link: Link) -> None:
    link.harness_grants("mini", 'allow = ["lan"]\n[needs]\nlan = "its Slack sockets ignore the proxy"\n')
    answer = decision(ask(link, needs_file(link, [LAN])))
    assert answer.granted == ["lan"] and not answer.asked


def test_a_deny_is_an_answer_too(link: Link) -> None:
    terminal = in_terminal(link, needs_file(link, [LAN]))
    terminal.expect("Allow lan for mini?")
    terminal.type("n")
    assert decision(terminal.finish()).denied == ["lan"]
    again = decision(ask(link, needs_file(link, [LAN])))
    assert again.denied == ["lan"] and again.granted == [] and not again.asked


def test_only_what_is_new_is_asked(link: Link) -> None:
    link.harness_grants("mini", 'allow = ["lan"]\n[needs]\nlan = "its Slack sockets ignore the proxy"\n')
    terminal = in_terminal(link, needs_file(link, [LAN, LOCALHOST]))
    seen = terminal.expect("Allow localhost for mini?")
    terminal.type("yes")
    answer = decision(terminal.finish())
    assert "Allow lan" not in seen
    assert answer.granted == ["lan", "localhost"]


def test_repermit_forgets_so_the_next_start_asks_again(link: Link) -> None:
    link.harness_grants("mini", 'allow = ["lan"]\n[needs]\nlan = "its Slack sockets ignore the proxy"\n')
    assert link.cli("harness", "repermit", "--harness", "mini").code == 0
    ran = ask(link, needs_file(link, [LAN]))
    assert ran.code == 1 and "--yes" in ran.err


def test_without_a_terminal_it_refuses_naming_yes_and_keeps_nothing(link: Link) -> None:
    ran = ask(link, needs_file(link, [LAN]))
    assert ran.code == 1
    assert "no terminal to ask the owner" in ran.err and "--yes" in ran.err
    assert json.loads(ran.out)["error"].startswith("mini needs lan")
    assert not link.layout.harness_grants("mini").exists()


def test_yes_answers_for_a_script_and_is_kept(link: Link) -> None:
    answer = decision(ask(link, needs_file(link, [LAN, LOCALHOST]), "--yes"))
    assert answer.granted == ["lan", "localhost"] and not answer.asked
    assert kept(link)["allow"] == ["lan", "localhost"]


def test_yes_never_answers_a_need_for_no_sandbox(link: Link) -> None:
    ran = ask(link, needs_file(link, [LAN, NO_SANDBOX]), "--yes")
    assert ran.code == 1 and "--allow-unsandboxed" in ran.err
    assert not link.layout.harness_grants("mini").exists()


def test_yes_in_a_terminal_still_asks_for_no_sandbox(link: Link) -> None:
    terminal = in_terminal(link, needs_file(link, [LAN, NO_SANDBOX]), "--yes")
    seen = terminal.expect("Run mini without a sandbox? [y/N]")
    terminal.type("n")
    answer = decision(terminal.finish())
    assert "Allow lan" not in seen and "reads and writes all you can" in seen
    assert answer.granted == ["lan"] and answer.denied == ["unsandboxed"]


def test_allow_unsandboxed_answers_that_need_and_nothing_else(link: Link) -> None:
    ran = ask(link, needs_file(link, [NO_SANDBOX, LAN]), "--allow-unsandboxed")
    assert ran.code == 1 and "--yes" in ran.err
    answer = decision(ask(link, needs_file(link, [NO_SANDBOX]), "--allow-unsandboxed"))
    assert answer.granted == ["unsandboxed"]


def test_a_machine_forbidding_no_sandbox_refuses_the_need_even_granted_before(link: Link) -> None:
    link.harness_grants("mini", 'allow = ["unsandboxed"]\n[needs]\nunsandboxed = "x"\n')
    link.machine("unsandboxed = false\n")
    ran = ask(link, needs_file(link, [NO_SANDBOX]), "--yes", "--allow-unsandboxed")
    assert ran.code == 1 and "forbids it" in ran.err


def test_what_the_agent_has_is_never_asked(link: Link) -> None:
    link.grants("main", 'allow = ["read-home"]\n')
    network = {"name": "network", "why": "to reach its model"}
    reading = {"name": "read-home", "why": "to read your notes"}
    answer = decision(ask(link, needs_file(link, [network, reading])))
    assert answer.granted == ["network", "read-home"] and not answer.asked
    assert not link.layout.harness_grants("mini").exists()


def test_an_optional_risk_stays_off_under_yes_and_without_a_terminal(link: Link) -> None:
    assert decision(ask(link, needs_file(link, [], [BROWSER]))).risks == []
    assert decision(ask(link, needs_file(link, [], [BROWSER]), "--yes")).risks == []
    assert not link.layout.harness_grants("mini").exists()


def test_an_optional_risk_turns_on_only_with_a_yes_in_a_terminal(link: Link) -> None:
    terminal = in_terminal(link, needs_file(link, [], [BROWSER]))
    seen = terminal.expect("Allow browser for mini?")
    terminal.type("y")
    assert decision(terminal.finish()).risks == ["browser"]
    assert "Without it: no browsing" in seen
    assert kept(link)["risks"] == ["browser"]


def test_a_risk_it_cant_run_without_is_asked_as_a_permission_is(link: Link) -> None:
    ran = ask(link, needs_file(link, [], [BRIDGE]))
    assert ran.code == 1 and "--yes" in ran.err
    assert decision(ask(link, needs_file(link, [], [BRIDGE]), "--yes")).risks == ["whatsapp-bridge"]


def test_a_need_with_an_unknown_name_is_refused(link: Link) -> None:
    ran = ask(link, needs_file(link, [{"name": "lna", "why": "a typo"}]), "--yes")
    assert ran.code == 1 and "unknown permission 'lna'" in ran.err


def test_the_terminal_closing_before_an_answer_changes_nothing(link: Link) -> None:
    terminal = in_terminal(link, needs_file(link, [LAN]))
    terminal.expect("Allow lan for mini?")
    os.write(terminal.master, b"\x04")
    ran = terminal.finish()
    assert ran.code == 1 and not link.layout.harness_grants("mini").exists()


@pytest.mark.parametrize("allow", [True, False])
def test_harness_allow_and_deny_change_a_declared_need(link: Link, allow: bool) -> None:
    link.harness_grants(
        "mini",
        'deny = ["lan"]\n[needs]\nlan = "its sockets"\n'
        if allow
        else 'allow = ["lan"]\n[needs]\nlan = "its sockets"\n',
    )
    ran = link.cli("harness", "allow" if allow else "deny", "lan", "--harness", "mini")
    assert ran.code == 0, ran
    assert kept(link)["allow" if allow else "deny"] == ["lan"]
    assert "allow" not in kept(link) if not allow else "deny" not in kept(link)


def test_harness_allow_refuses_what_the_harness_never_asked(link: Link) -> None:
    ran = link.cli("harness", "allow", "localhost", "--harness", "mini")
    assert ran.code == 1 and "mini doesn't ask for localhost" in ran.err and "lnk agent allow localhost" in ran.err


def test_harness_allow_takes_a_need_from_its_needs_now(link: Link) -> None:
    ran = link.cli("harness", "allow", "browser", "--harness", "mini", "--needs", needs_file(link, [], [BROWSER]))
    assert ran.code == 0 and kept(link)["risks"] == ["browser"]


def test_the_harness_layer_is_in_force_only_for_its_harness(link: Link) -> None:
    link.harness_grants("mini", 'allow = ["lan"]\n[needs]\nlan = "its sockets"\n')
    with_it = json.loads(link.cli("grants", "--agent", "main", "--harness", "mini", "--json").out)
    alone = json.loads(link.cli("grants", "--agent", "main", "--json").out)
    assert with_it["permissions"]["lan"] and with_it["harness"] == ["lan"] and not with_it["proxied"]
    assert not alone["permissions"]["lan"] and alone["proxied"]
    assert link.sh("echo ${HTTP_PROXY:-none}").out == "none\n"
    assert link.sh("echo ${HTTP_PROXY:-none}", harness="another").out == "http://127.0.0.1:3128\n"
