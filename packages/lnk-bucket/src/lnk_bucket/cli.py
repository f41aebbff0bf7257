"""`lnk-bucket`: what the core asks of a bucket (contract-spec/bucket.md).

Each command checks rclone first (its SHA-256 against the pin), then answers one JSON object on
stdout; a failure is `{"error", "hint"}` on stdout, the same on stderr, and exit code 1.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from link_plugin.answers import Answer
from link_plugin.bucket import Checked, Copied, Deleted
from link_plugin.contract import CONTRACT_VERSION, Contract, Kind
from link_plugin.errors import ExitCode, LinkError
from lnk_bucket import __version__
from lnk_bucket.index import IndexStore
from lnk_bucket.rclone import Rclone

Remote = Annotated[str, typer.Argument(help="The bucket's folder: REMOTE:PATH of Link's rclone settings, or a folder.")]
Folder = Annotated[Path, typer.Argument(help="A folder on this machine.")]
File = Annotated[Path, typer.Argument(help="A file on this machine.")]

app = typer.Typer(
    name="lnk-bucket",
    help=f"lnk-bucket: Link's buckets, by a pinned and checked rclone (contract {CONTRACT_VERSION}).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
index_app = typer.Typer(help="Memory's index: segments named by their SHA-256, a manifest last.", no_args_is_help=True)
app.add_typer(index_app, name="index")


def _answering(call: Callable[[], Answer]) -> None:
    try:
        result = call()
    except LinkError as exc:
        print(f"lnk-bucket: {exc}", file=sys.stderr)
        print(json.dumps({"error": exc.message, "hint": exc.hint}, separators=(",", ":")))
        raise typer.Exit(ExitCode.FAILED) from None
    print(result.to_json())


def _folder(path: Path, what: str) -> str:
    if not path.is_dir() or path.is_symlink():
        raise LinkError(f"{path} isn't a folder to {what}", "Name a folder on this machine (not a link to one).")
    return str(path)


@app.command()
def contract() -> None:
    """The bucket's kind, name and the contract version it speaks."""
    _answering(lambda: Contract(kind=Kind.BUCKET, version=CONTRACT_VERSION, name="bucket", release=__version__))


@app.command()
def check() -> None:
    """The rclone lnk-bucket runs: its version, path and SHA-256, once it matched the pin."""

    def checked() -> Checked:
        rclone = Rclone()
        return Checked(rclone=rclone.version(), path=str(rclone.path), sha256=rclone.pinned.sha256)

    _answering(checked)


@app.command()
def push(folder: Folder, remote: Remote) -> None:
    """Copy every file of FOLDER that changed since it was last there into REMOTE; delete nothing."""
    _answering(lambda: Copied(copied=Rclone().copy(_folder(folder, "push"), remote, f"pushing {folder} to {remote}")))


@app.command()
def pull(remote: Remote, folder: Folder) -> None:
    """Copy REMOTE's files into FOLDER, overwriting those that differ; delete nothing."""

    def pulled() -> Copied:
        folder.mkdir(parents=True, exist_ok=True)
        return Copied(copied=Rclone().copy(remote, _folder(folder, "pull into"), f"pulling {remote} into {folder}"))

    _answering(pulled)


@app.command()
def get(remote: Annotated[str, typer.Argument(help="A file in the bucket.")], file: File) -> None:
    """Copy one file of the bucket to FILE."""

    def got() -> Copied:
        Rclone().copy_file(remote, str(file), f"reading {remote}")
        return Copied(copied=1)

    _answering(got)


@app.command()
def put(file: File, remote: Annotated[str, typer.Argument(help="Where in the bucket.")]) -> None:
    """Copy FILE into the bucket as REMOTE."""

    def sent() -> Copied:
        if not file.is_file() or file.is_symlink():
            raise LinkError(f"{file} isn't a file to send", "Name a file on this machine (not a link to one).")
        Rclone().copy_file(str(file), remote, f"sending {file} to {remote}")
        return Copied(copied=1)

    _answering(sent)


@app.command()
def delete(remote: Remote) -> None:
    """Delete REMOTE and everything in it."""

    _answering(lambda: Deleted(deleted=Rclone().purge(remote)))


@index_app.command("read")
def index_read(remote: Remote, file: File) -> None:
    """The index's latest version into FILE (version 0: none there, FILE left as it was)."""
    _answering(lambda: IndexStore(Rclone(), remote).read(file))


@index_app.command("write")
def index_write(
    remote: Remote,
    file: File,
    over: Annotated[int, typer.Option("--over", min=0, help="The version FILE was made over (0: none).")],
) -> None:
    """FILE as the index's next version, only if the latest is still --over (else refused)."""

    def written() -> Answer:
        if not file.is_file():
            raise LinkError(f"{file} isn't a file to keep as the index", "Name the index file on this machine.")
        return IndexStore(Rclone(), remote).write(file, over)

    _answering(written)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def rclone(ctx: typer.Context) -> None:
    """Run the pinned rclone with Link's rclone settings (`lnk-bucket rclone config` sets up a remote)."""
    try:
        checked = Rclone()
    except LinkError as exc:
        print(f"lnk-bucket: {exc}", file=sys.stderr)
        raise typer.Exit(ExitCode.FAILED) from None
    argv = checked.argv(ctx.args)
    os.execv(argv[0], argv)


def main() -> None:
    app()
