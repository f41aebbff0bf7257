"""`check`: each permission tried from inside a sandbox built as the harness's is, and what is open."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from pathlib import Path

from link_plugin.errors import LinkError
from link_plugin.layout import Layout
from link_plugin.permissions import Permission
from link_plugin.sandbox import Check, SandboxRequest
from lnk_sandbox.grants import agent_settings, load_agent
from lnk_sandbox.policy import HOME_TOOLCHAINS, TOOLCHAINS, Policy, desktop_session, interpreter, source_of
from lnk_sandbox.runner import Sandbox

SAMPLE = 20


def _probe_input(policy: Policy, layout: Layout, agent: str, environ: Mapping[str, str]) -> dict[str, object]:
    home = Path(environ.get("HOME") or Path.home())
    hidden = {layout.config.resolve(), layout.agents.resolve()}
    entries = []
    if home.is_dir():
        for entry in sorted(home.iterdir()):
            if not any(entry.resolve() == h or entry.resolve() in h.parents for h in hidden):
                entries.append(entry.name)
    hosts = load_agent(layout, agent).hosts
    named = [host for host in hosts or () if "*" not in host]
    toolchains = [*TOOLCHAINS, *(str(home / path) for path in HOME_TOOLCHAINS)]
    return {
        "proxy": f"127.0.0.1:{policy.proxy_port}" if policy.rules is not None else None,
        "host": named[0] if named else "example.com",
        "home": str(home),
        "entries": entries[:SAMPLE],
        "toolchains": [path for path in toolchains if Path(path).is_dir()],
        "desktop": [str(path) for path in desktop_session(environ, home)[0]],
    }


def check(layout: Layout, agent: str, harness: str | None, environ: Mapping[str, str]) -> Check:
    harness = harness or agent_settings(layout, agent).harness
    if not harness:
        raise LinkError(f"{agent} has no harness yet: name one to check its sandbox with --harness.")
    base = SandboxRequest(agent=agent, harness=harness, argv=["true"])
    sandbox = Sandbox(base, layout, environ=environ)
    if sandbox.unsandboxed():
        return Check(
            results={p.value: True for p in Permission if p != Permission.UNSANDBOXED} | {"unsandboxed": True},
            details={"unsandboxed": f"{harness} runs without a sandbox: everything you can reach is open"},
            sandboxed=False,
        )
    with sandbox.policy() as policy:
        given = json.dumps(_probe_input(policy, layout, agent, environ))
    request = base.model_copy(update={"argv": [interpreter(), "-I", "-S", "-c", source_of("probe"), given]})
    with tempfile.TemporaryFile() as output:
        code = Sandbox(request, layout, environ=environ, stdout=output).run()
        output.seek(0)
        text = output.read().decode()
    if code != 0:
        raise LinkError(f"The check didn't run inside the sandbox (it ended with {code}).")
    found: dict[str, list[object]] = json.loads(text)
    if not policy.namespace:
        found["network"] = [True, "the network as it is (lan), without the proxy"]
        found["localhost"] = [True, "this machine's loopback directly (lan)"]
    results = {name: bool(value[0]) for name, value in found.items()} | {"unsandboxed": False}
    details = {name: str(value[1]) for name, value in found.items()}
    return Check(results=results, details=details, sandboxed=True)
