"""How signal-cli is run: the installed program under its own Java, its device's folder, and
Link's proxy passed on as Java's proxy properties.

    signal-cli --config <home>/device [-a <account>] jsonRpc

Always `jsonRpc`, JSON-RPC on its stdin and stdout: never `daemon --http`, which would listen on
the loopback, where any user of the machine could send as the agent. The device's keys live in
`<home>/device` (signal-cli's `--config`), which is what a move carries.

Java reads no `HTTPS_PROXY`: it has its own proxy properties. Where Link's proxy is set (in a
sandbox: `LNK_PROXY`, or `https_proxy`), its host and port are handed to Java as
`-Dhttps.proxyHost`/`-Dhttps.proxyPort` (and the `http.` pair) in `JAVA_OPTS`, which signal-cli's
start script passes to Java, with `no_proxy` as `http.nonProxyHosts`, so signal-cli's traffic
goes through the proxy like everything else in the sandbox.

`LNK_SIGNAL_CLI` names another program to run in signal-cli's place, with the same arguments (the
tests' fake, which speaks the same JSON-RPC).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from link_plugin.errors import LinkError
from lnk_signal.install import Say, folder, install, installed
from lnk_signal.section import DEVICE

ENV_PROGRAM = "LNK_SIGNAL_CLI"
MANUAL = "--receive-mode=manual"
"""A signal-cli run for a few requests (linking, a look-up) receives nothing: what comes waits
for the bridge's."""


@dataclass(frozen=True)
class Program:
    """A command that runs signal-cli, and what its environment adds."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)

    def command(self, home: Path | None, *args: str, account: str | None = None) -> list[str]:
        """signal-cli with the device in `home` (None: signal-cli's own folder), as `account` when
        given (else every account there)."""
        config = ["--config", str(home / DEVICE)] if home is not None else []
        chosen = ["-a", account] if account else []
        return [*self.argv, *config, *chosen, *args]

    def environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment to run it in: `base` (this one) with Java's home and proxy added."""
        base = dict(os.environ if base is None else base)
        options = " ".join(shlex.quote(option) for option in java_proxy(base))
        if options:
            base["JAVA_OPTS"] = f"{base['JAVA_OPTS']} {options}" if base.get("JAVA_OPTS") else options
        return {**base, **self.env}


def program(home: Path | None) -> Program:
    """signal-cli as installed in `home` (or `LNK_SIGNAL_CLI`), or a LinkError saying how to install it."""
    override = os.environ.get(ENV_PROGRAM)
    if override:
        return Program(shlex.split(override))
    if home is None:
        raise LinkError(
            "no channel folder was named, where signal-cli and the linked device are",
            "Run it from `lnk agent start`, which names the folder.",
        )
    found = installed(home)
    if found is None:
        raise LinkError(
            f"signal-cli isn't installed in {home}",
            "Run `lnk agent connect signal` (or `lnk-signal cli install`), which installs it.",
        )
    base = folder(home)
    return Program(
        [str(base / found.program_folder / "bin" / "signal-cli")],
        {"JAVA_HOME": str(base / found.java_folder)},
    )


def java_proxy(env: Mapping[str, str]) -> list[str]:
    """Java's proxy properties for the proxy `env` names (`LNK_PROXY`, else `https_proxy`); none without one."""
    url = env.get("LNK_PROXY") or env.get("https_proxy") or env.get("HTTPS_PROXY")
    if not url:
        return []
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if not parts.hostname:
        return []
    port = parts.port or 80
    options = [
        f"-D{scheme}.proxy{key}={value}"
        for scheme in ("http", "https")
        for key, value in (("Host", parts.hostname), ("Port", port))
    ]
    skip = [host.strip() for host in (env.get("no_proxy") or env.get("NO_PROXY") or "").split(",") if host.strip()]
    if skip:
        options.append(f"-Dhttp.nonProxyHosts={'|'.join(skip)}")
    return options


def ensure(home: Path, say: Say) -> Program:
    """signal-cli for `home`, installed there first when it isn't (never in place of `LNK_SIGNAL_CLI`)."""
    if not os.environ.get(ENV_PROGRAM):
        install(home, say)
    return program(home)
