"""`lnk-sandbox` as the core calls it: contract, permissions, run (by request and by agent), check."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import MAIN_ID
from helpers import PROGRAM, Link, free_port

from link_plugin.contract import Contract
from link_plugin.sandbox import Check, Grants, Permissions, SandboxRequest


def test_contract_says_it_is_the_sandbox(link: Link) -> None:
    answer = Contract.model_validate_json(link.cli("contract").out)
    assert answer.kind == "sandbox" and answer.version == 1


def test_permissions_are_this_oses_own(link: Link) -> None:
    listing = Permissions.model_validate_json(link.cli("permissions", "--json").out)
    by_name = {p.name: p for p in listing.permissions}
    assert listing.os == "linux"
    assert {name for name, p in by_name.items() if p.on_by_default} == {"network", "developer-tools"}
    assert "Xcode" not in link.cli("permissions").out and "/usr/local" in by_name["developer-tools"].what


def test_run_takes_the_cores_request(link: Link) -> None:
    request = link.root / "request.json"
    home = link.layout.agent("main").home
    request.write_text(
        SandboxRequest(
            agent="main",
            harness="mini",
            argv=["sh", "-c", "echo $GREETING; pwd; exit 3"],
            env={"GREETING": "hi"},
            cwd=str(home),
            writes=[str(home)],
        ).to_json()
    )
    ran = link.cli("run", "--request", str(request))
    assert ran.code == 3 and ran.out == f"hi\n{home}\n", ran


def test_a_broken_request_is_refused_naming_what_is_wrong(link: Link) -> None:
    request = link.root / "request.json"
    request.write_text(json.dumps({"agent": "main", "argv": []}))
    ran = link.cli("run", "--request", str(request))
    assert ran.code == 125 and "argv" in ran.err


def test_an_unreadable_request_is_refused_saying_so(link: Link) -> None:
    ran = link.cli("run", "--request", str(link.root / "missing.json"))
    assert ran.code == 125 and "can't be read" in ran.err and "Traceback" not in ran.err
    request = link.root / "request.json"
    request.write_text(json.dumps({"agent": "main", "argv": ["true"], "writes": ["/tmp/a\u0000b"]}))
    ran = link.cli("run", "--request", str(request))
    assert ran.code == 125 and "Traceback" not in ran.err


def imported(link: Link, *args: str) -> set[str]:
    """The modules `lnk-sandbox ARGS` imports, as `python -X importtime` lists them."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", PROGRAM, *args], capture_output=True, text=True, env=link.environ
    )
    assert done.returncode == 0, done.stderr
    return {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


def test_what_the_core_runs_at_each_start_loads_no_cli_and_no_model(link: Link) -> None:
    """`run --request` and `grants --json` start in milliseconds: neither typer nor pydantic, nor
    even `typing`, and the proxy (asyncio, h11, TLS) only once a connection needs it."""
    request = link.root / "request.json"
    request.write_text(SandboxRequest(agent="main", harness="mini", argv=["true"], ports=[free_port()]).to_json())
    heavy = {"typer", "pydantic", "typing", "asyncio", "h11", "ssl", "lnk_sandbox.proxy", "lnk_sandbox.cli"}
    assert "pydantic" in imported(link, "run", "--request", str(request))  # the grants files checked, once
    for args in (("run", "--request", str(request)), ("grants", "--agent", "main", "--harness", "mini", "--json")):
        assert not heavy & imported(link, *args), args


def test_grants_json_answers_the_model_whichever_way_it_is_asked(link: Link) -> None:
    link.grants("main", 'allow = ["lan"]\nhosts = ["example.com"]\ntcp = ["github.com:22"]\n')
    link.harness_grants("mini", 'allow = ["read-home"]\nrisks = ["shell"]\n[needs]\nread-home = "x"\nshell = "y"\n')
    quick = link.cli("grants", "--harness", "mini", "--json", "--agent", "main")
    full = link.cli("grants", "--agent=main", "--harness=mini", "--json")
    assert quick.code == full.code == 0
    assert Grants.model_validate_json(quick.out) == Grants.model_validate_json(full.out)
    found = Grants.model_validate_json(quick.out)
    assert found.permissions["lan"] and found.permissions["read-home"] and found.harness == ["read-home"]
    assert found.tcp == ["github.com:22"] and found.risks == ["shell"] and "lan" in found.warnings[0]


def test_grants_of_an_agent_that_isnt_there_is_an_error_with_a_hint(link: Link) -> None:
    ran = link.cli("grants", "--agent", "nobody", "--json")
    answer = json.loads(ran.out)
    assert ran.code == 1 and "nobody" in answer["error"] and answer["hint"] and "Traceback" not in ran.err


def test_run_as_the_agent_with_a_command(link: Link) -> None:
    ran = link.cli("run", "--agent", "main", "--", "sh", "-c", "echo $HOME")
    assert ran.code == 0 and ran.out.strip() == str(link.layout.agent("main").harness_home("mini"))


def test_without_bubblewrap_nothing_runs_and_it_says_how_to_install_it(link: Link) -> None:
    marker = link.root / "ran"
    bare = link.root / "bin"
    bare.mkdir()
    for name in ("touch", "sh"):
        os.symlink(f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else f"/bin/{name}", bare / name)
    ran = link.cli("run", "--agent", "main", "--", "touch", str(marker), env={"PATH": str(bare)})
    assert ran.code == 125 and "apt-get install bubblewrap" in ran.err
    assert not marker.exists()


def test_no_sandbox_for_one_start_is_refused_where_the_machine_forbids_it(link: Link) -> None:
    link.machine("unsandboxed = false\n")
    marker = link.root / "ran"
    request = link.root / "request.json"
    request.write_text(
        SandboxRequest(agent="main", harness="mini", argv=["touch", str(marker)], no_sandbox=True).to_json()
    )
    ran = link.cli("run", "--request", str(request))
    assert ran.code == 125 and "forbids it" in ran.err and not marker.exists()


def test_a_harness_granted_no_sandbox_earlier_is_refused_where_the_machine_forbids_it(link: Link) -> None:
    link.harness_grants("mini", 'allow = ["unsandboxed"]\n[needs]\nunsandboxed = "it must"\n')
    link.machine("unsandboxed = false\n")
    marker = link.root / "ran"
    ran = link.cli("run", "--agent", "main", "--", "touch", str(marker))
    assert ran.code == 125 and "a grant made earlier doesn't change this" in ran.err and not marker.exists()


def test_a_harness_granted_no_sandbox_runs_without_one_and_says_so(link: Link) -> None:
    link.harness_grants("mini", 'allow = ["unsandboxed"]\n[needs]\nunsandboxed = "it must"\n')
    ran = link.cli("run", "--agent", "main", "--", "cat", str(link.layout.agent_config("main").settings))
    assert ran.code == 0 and MAIN_ID in ran.out
    assert "runs without a sandbox" in ran.err


STOPPABLE = "trap 'echo stopped; kill $!; exit 0' TERM; echo up; sleep 30 & wait"


@pytest.mark.parametrize("sandboxed", [True, False])
def test_a_stop_reaches_the_command(link: Link, sandboxed: bool) -> None:
    if not sandboxed:
        link.harness_grants("mini", 'allow = ["unsandboxed"]\n[needs]\nunsandboxed = "it must"\n')
    process = subprocess.Popen(
        [PROGRAM, "run", "--agent", "main", "--", "sh", "-c", STOPPABLE],
        stdout=subprocess.PIPE,
        env=link.environ,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "up\n"
    time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=30)
    assert out == "stopped\n" and process.returncode == 0


def test_a_stop_reaches_the_command_the_core_started(link: Link) -> None:
    request = link.root / "request.json"
    request.write_text(SandboxRequest(agent="main", harness="mini", argv=["sh", "-c", STOPPABLE]).to_json())
    process = subprocess.Popen([PROGRAM, "run", "--request", str(request)], stdout=subprocess.PIPE, env=link.environ)
    assert process.stdout is not None
    assert process.stdout.readline() == b"up\n"
    time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=30)
    assert out == b"stopped\n" and process.returncode == 0


def test_check_says_what_is_open(link: Link) -> None:
    found = Check.model_validate_json(link.cli("check", "--agent", "main", "--json").out)
    assert found.sandboxed
    assert found.results == {
        "network": True,
        "localhost": False,
        "lan": False,
        "read-home": False,
        "developer-tools": True,
        "open": False,
        "unsandboxed": False,
    }, found.details
    assert "needs the localhost permission" in found.details["localhost"]


def test_check_follows_the_grants(link: Link) -> None:
    link.grants("main", 'allow = ["read-home", "localhost"]\ndeny = ["network", "developer-tools"]\n')
    found = Check.model_validate_json(link.cli("check", "--agent", "main", "--json").out)
    assert found.results["read-home"] and found.results["localhost"]
    assert not found.results["network"] and not found.results["developer-tools"]
    assert "network permission is off" in found.details["network"]


def test_check_with_lan_says_the_network_is_as_it_is(link: Link) -> None:
    link.grants("main", 'allow = ["lan"]\n')
    ran = link.cli("check", "--agent", "main")
    assert ran.code == 0
    lines = {line.split()[0]: line.split()[1] for line in ran.out.splitlines()}
    assert lines["lan"] == "open" and lines["network"] == "open" and lines["localhost"] == "open"
