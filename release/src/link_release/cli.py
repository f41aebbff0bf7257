"""`link-release`: build, test, sign, check and tag Link's release.

link-release build dist/release           every wheel and sdist, the manifest, the simple index
link-release test-wheels dist/release     each package's tests against the built wheels
link-release sign dist/release            signs every file and the manifest (key: --key-file or LNK_RELEASE_KEY)
link-release verify dist/release          checks it all as lnk does, with the pinned key or --public-key
link-release tags dist/release [--create] the <distribution>==<version> tags
link-release keygen <secret> <public>     a new key pair in minisign's format
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from link_plugin.errors import LinkError
from link_release import index, keys, tags, wheels
from lnk.release import Manifest
from lnk.signing import PublicKey, release_key

app = typer.Typer(name="link-release", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

ROOT = typer.Option(Path("."), "--root", help="The repository's root.")
OUT = typer.Argument(..., help="The release folder.")


def _listing(manifest: Manifest) -> str:
    return "\n".join(
        f"  {d.name} {d.version}: {', '.join(f.filename for f in d.files)}" for d in manifest.distributions
    )


@app.command()
def build(out: Path = OUT, root: Path = ROOT) -> None:
    """Build every package's wheel and sdist into a new release folder, with its manifest and simple index."""
    manifest = index.build_release(root.resolve(), out)
    typer.echo(f"Built Link {manifest.core} into {out}:\n{_listing(manifest)}")


@app.command("test-wheels")
def test_wheels(out: Path = OUT, root: Path = ROOT) -> None:
    """Run each released package's tests against its built wheel."""
    manifest = Manifest.model_validate_json((out / "manifest.json").read_bytes())
    results = wheels.test_wheels(root.resolve(), out, manifest)
    for name, code in results:
        typer.echo(f"{'ok    ' if code == 0 else 'FAILED'} {name}")
    if any(code for _, code in results):
        raise typer.Exit(1)


@app.command()
def sign(
    out: Path = OUT,
    key_file: Annotated[Path | None, typer.Option("--key-file", help=f"The secret key; else ${keys.ENV_KEY}.")] = None,
) -> None:
    """Sign every file and the manifest, then check them all."""
    key = keys.load_key(key_file)
    manifest = index.sign_release(out, key)
    typer.echo(f"Signed Link {manifest.core} in {out} with key {key.public.key_id_hex}.")


@app.command()
def verify(
    location: Annotated[str, typer.Argument(help="The release: a folder or a URL.")],
    public_key: Annotated[Path | None, typer.Option("--public-key", help="A .pub file; else lnk's pinned key.")] = None,
) -> None:
    """Check the manifest's signature and every file's SHA-256 and signature, as lnk does."""
    key = PublicKey.parse(public_key.read_text()) if public_key else release_key()
    manifest = index.verify_release(location, key)
    typer.echo(f"Every file of Link {manifest.core} at {location} is signed by {key.key_id_hex}:\n{_listing(manifest)}")


@app.command("tags")
def tags_command(
    out: Path = OUT,
    root: Path = ROOT,
    create: Annotated[bool, typer.Option("--create", help="Make the new tags (git tag -a).")] = False,
) -> None:
    """The release's <distribution>==<version> tags; refuses a package changed under a tagged version."""
    manifest = Manifest.model_validate_json((out / "manifest.json").read_bytes())
    if create:
        made = tags.create(root.resolve(), manifest)
        typer.echo("\n".join(made) if made else "No new tags: every version is tagged already.")
        return
    for tag, new in tags.plan(root.resolve(), manifest):
        typer.echo(f"{tag}{' (new)' if new else ''}")


@app.command()
def keygen(secret: Path, public: Path) -> None:
    """Make a new release key pair (no password: keep the secret key in CI's secrets only)."""
    key = keys.SecretKey.generate()
    keys.write_pair(key, secret, public)
    typer.echo(f"Wrote {secret} (secret, 0600) and {public}; key {key.public.key_id_hex}: {key.public.line}")


def main() -> None:
    try:
        app()
    except LinkError as exc:
        typer.echo(str(exc), err=True)
        raise SystemExit(1) from exc
