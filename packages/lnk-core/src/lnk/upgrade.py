"""`lnk upgrade`: lnk and every plugin it installed move to the newest signed release."""

from __future__ import annotations

import typer
from packaging.version import Version
from rich.console import Console

from link_plugin.errors import LinkError
from lnk.install import install, installed_version, one_installer
from lnk.release import ReleaseIndex


def upgrade_command() -> None:
    """Move lnk and every installed plugin to the newest release Link signed. Never moves one back."""
    console = Console(stderr=True)
    try:
        index = ReleaseIndex.from_env()
        manifest = index.manifest()
        moves: list[tuple[str, Version, str]] = []
        current: list[str] = []
        for dist in manifest.distributions:
            have = installed_version(dist.name)
            if have is None:
                continue
            if Version(dist.version) > have:
                moves.append((dist.name, have, dist.version))
            else:
                current.append(f"{dist.name} {have}")
        if not moves:
            typer.echo(f"Up to date with the release at {index.location}: {', '.join(current)}.")
            return
        with one_installer():
            install(index, manifest, [name for name, _, _ in moves], console)
    except LinkError as exc:
        console.print(exc.message, style="red", markup=False)
        if exc.hint:
            console.print(exc.hint, markup=False)
        raise typer.Exit(1) from exc
    for name, have, version in moves:
        typer.echo(f"{name} {have} -> {version}")
