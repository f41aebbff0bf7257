"""Everything lnk asks of lnk-bucket, through its executable and link_plugin.bucket.

An agent's bucket is one folder rclone reaches (`lnk bucket set`); Link keeps there

    <bucket>/lnk-agent.json          who the agent is: its ID, name, harness, model and memory engine
    <bucket>/files/                  its files folder (Home), the harness's state archive inside
    <bucket>/memory/<engine>/        memory's index, as segments and manifests (contract-spec/bucket.md)

and nothing else: no key, no token, no grant, no other setting.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from link_plugin.answers import parse_answer
from link_plugin.bucket import Copied, Deleted, IndexVersion
from link_plugin.calls import PluginProgram
from link_plugin.errors import ExitCode, LinkError
from link_plugin.model import Model
from lnk.plugins import require

BUCKET = "lnk-bucket"
IDENTITY = "lnk-agent.json"
FILES = "files"

TIMEOUT = 24 * 3600.0
"""A push of a large files folder over a slow link takes what it takes; rclone itself gives up
on a remote that stops answering."""


class Identity(Model):
    """`lnk-agent.json`: what a restore needs to bring the agent back as itself, and no more."""

    id: str
    name: str
    harness: str | None = None
    model: str | None = None
    memory: str | None = None
    embeddings: str | None = None


def program() -> PluginProgram:
    return PluginProgram(require(BUCKET), timeout=TIMEOUT)


M = TypeVar("M", bound=BaseModel)


def _ask(model: type[M], *args: str) -> M:
    asked = program().run(args[0], args[1:])
    if asked.code != ExitCode.ANSWERED:
        try:
            said = parse_answer(_Failure, asked.stdout, source=f"{BUCKET} {args[0]}")
        except LinkError:
            tail = "\n".join(asked.stderr.strip().splitlines()[-5:])
            raise LinkError(f"{BUCKET} {args[0]} failed (exit {asked.code}).", tail or None) from None
        raise LinkError(said.error, said.hint)
    return parse_answer(model, asked.stdout, source=f"{BUCKET} {args[0]}")


class _Failure(Model):
    error: str
    hint: str | None = None


def join(bucket: str, *parts: str) -> str:
    return "/".join([bucket.rstrip("/"), *parts])


def push(folder: Path, remote: str) -> int:
    return _ask(Copied, "push", str(folder), remote).copied


def pull(remote: str, folder: Path) -> int:
    return _ask(Copied, "pull", remote, str(folder)).copied


def get(remote: str, file: Path) -> None:
    _ask(Copied, "get", remote, str(file))


def put(file: Path, remote: str) -> None:
    _ask(Copied, "put", str(file), remote)


def delete(remote: str) -> bool:
    return _ask(Deleted, "delete", remote).deleted


def index_read(remote: str, file: Path) -> IndexVersion:
    return _ask(IndexVersion, "index", "read", remote, str(file))


def index_write(remote: str, file: Path, over: int) -> IndexVersion:
    return _ask(IndexVersion, "index", "write", remote, str(file), "--over", str(over))


def rclone_argv(args: list[str]) -> list[str]:
    """`lnk-bucket rclone ARGS`: the pinned rclone with Link's rclone settings, for a terminal."""
    return [require(BUCKET), "rclone", *args]
