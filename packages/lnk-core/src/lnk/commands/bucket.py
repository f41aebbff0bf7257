"""`lnk bucket`: where an agent's backups go, and deleting them.

An agent's bucket is one folder rclone reaches, kept in its settings (`bucket` in
settings.toml): a folder on a disk, or REMOTE:PATH of a remote set up with `lnk bucket config`,
which keeps remotes in Link's own rclone settings (`rclone.conf` in Link's settings folder).
"""

from __future__ import annotations

import os
from typing import Annotated

import typer

from link_plugin.errors import LinkError
from lnk import buckets
from lnk.agents import DEFAULT_AGENT
from lnk.commands.common import AgentArg, JsonOpt, YesOpt, agent, confirm, emit, layout, out, say

app = typer.Typer(help="Buckets: where an agent's backups go (any rclone remote, or a folder).", no_args_is_help=True)

RemoteArg = Annotated[str, typer.Argument(help="A folder, or REMOTE:PATH of a remote `lnk bucket config` set up.")]


def _check_remote(remote: str) -> str:
    remote = remote.strip()
    if not remote or any(ord(c) < 32 for c in remote):
        raise LinkError(f"{remote!r} isn't a bucket.", "Name a folder, or REMOTE:PATH (s3:my-bucket/work).")
    if remote.startswith("/") or ":" not in remote:
        return os.path.abspath(os.path.expanduser(remote))
    return remote


@app.command("set")
def set_(name: Annotated[str, typer.Argument(help="The agent.")], remote: RemoteArg) -> None:
    """Name the agent's bucket, where `lnk agent backup` keeps it."""
    found = agent(name)
    bucket = _check_remote(remote)
    found.with_settings(bucket=bucket).save()
    say(f"{name}'s backups go to {bucket}. `lnk agent backup {name}` makes one.")


@app.command()
def show(name: AgentArg = DEFAULT_AGENT, as_json: JsonOpt = False) -> None:
    """Where the agent's backups go."""
    found = agent(name)
    if as_json:
        emit({"agent": name, "id": found.id, "bucket": found.settings.bucket})
    elif found.settings.bucket:
        out.print(found.settings.bucket, markup=False)
    else:
        say(f"{name} has no bucket: `lnk bucket set {name} REMOTE` names one.")


@app.command()
def delete(
    name: Annotated[str, typer.Argument(help="The agent whose bucket goes.")],
    source: Annotated[str | None, typer.Option("--from", help="The bucket, when the agent isn't here.")] = None,
    yes: YesOpt = False,
) -> None:
    """Delete the agent's backups: everything in its bucket. (`lnk agent delete` keeps them.)"""
    here = name in layout().agent_names()
    remote = _check_remote(source) if source else (agent(name).settings.bucket if here else None)
    if not remote:
        raise LinkError(
            f"{name} has no bucket here to delete.",
            f"`lnk bucket delete {name} --from REMOTE` names one it had.",
        )
    confirm(f"Delete everything in {remote}, every backup of {name}? This can't be undone.", yes, "Deleting a bucket")
    deleted = buckets.delete(remote)
    if here:
        found = agent(name)
        if found.settings.bucket == remote:
            found.with_settings(bucket=None).save()
    say(f"{remote} is deleted." if deleted else f"{remote} held nothing.")


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def config(ctx: typer.Context) -> None:
    """Set up a remote in Link's own rclone settings (rclone's own questions), for `lnk bucket set`."""
    argv = buckets.rclone_argv(["config", *ctx.args])
    os.execv(argv[0], argv)
