"""Laying out a release: files/, the manifest, a PEP 503 simple index; then signing and checking it all."""

from __future__ import annotations

import hashlib
import html
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from packaging.utils import canonicalize_name

from link_release.build import build_package, source_date_epoch
from link_release.keys import SecretKey
from link_release.tree import TreeError, packages
from lnk.release import FILES, MANIFEST, SIMPLE, Manifest, ReleaseIndex
from lnk.signing import SUFFIX, PublicKey

CORE = "lnk"


def _page(title: str, links: list[tuple[str, str]]) -> str:
    anchors = "\n".join(f'    <a href="{html.escape(href)}">{html.escape(text)}</a><br>' for href, text in links)
    return (
        f"<!DOCTYPE html>\n<html>\n  <head><title>{html.escape(title)}</title></head>\n"
        f"  <body>\n{anchors}\n  </body>\n</html>\n"
    )


def write_simple(out: Path, manifest: Manifest) -> None:
    """The PEP 503 pages: one per project, linking its files with their SHA-256."""
    simple = out / SIMPLE
    projects = sorted(manifest.distributions, key=lambda d: canonicalize_name(d.name))
    for dist in projects:
        links = [(f"../../{FILES}/{f.filename}#sha256={f.sha256}", f.filename) for f in dist.files]
        page = simple / canonicalize_name(dist.name) / "index.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(_page(f"Links for {dist.name}", links))
    names = [(f"{canonicalize_name(d.name)}/", d.name) for d in projects]
    (simple / "index.html").write_text(_page("Link's release", names))


def _commit(root: Path) -> str | None:
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def build_release(root: Path, out: Path) -> Manifest:
    """Build every package of the tree at `root` into a new release folder `out` (unsigned)."""
    if out.exists() and any(out.iterdir()):
        raise TreeError(f"{out} is not empty: a release is built into a folder of its own.", "Pick a new folder.")
    files = out / FILES
    files.mkdir(parents=True, exist_ok=True)
    epoch = source_date_epoch(root)
    distributions = []
    for package in packages(root):
        dist = build_package(package, files, epoch)
        distributions.append(dist.model_copy(update={"path": str(package.folder.resolve().relative_to(root))}))
    names = [canonicalize_name(d.name) for d in distributions]
    if doubles := sorted({n for n in names if names.count(n) > 1}):
        raise TreeError(f"Two packages are both named {', '.join(doubles)}; each distribution needs its own name.")
    core = next((d for d in distributions if d.name == CORE), None)
    if core is None:
        raise TreeError(f"The tree at {root} has no {CORE} package, whose version the release carries.")
    manifest = Manifest(
        core=core.version,
        commit=_commit(root),
        created=datetime.fromtimestamp(int(epoch), UTC),
        distributions=distributions,
    )
    (out / MANIFEST).write_text(manifest.model_dump_json(indent=2, exclude_none=True) + "\n")
    write_simple(out, manifest)
    return manifest


def sign_release(out: Path, key: SecretKey) -> Manifest:
    """Sign every file the manifest names, and the manifest; then check it all as lnk will."""
    manifest = Manifest.model_validate_json((out / MANIFEST).read_bytes())
    for dist in manifest.distributions:
        for entry in dist.files:
            path = out / FILES / entry.filename
            data = path.read_bytes()
            if hashlib.sha256(data).hexdigest() != entry.sha256:
                raise TreeError(f"{path} changed after the build; build the release again.")
            (out / FILES / (entry.filename + SUFFIX)).write_text(key.sign(data, entry.filename).file_text())
    (out / (MANIFEST + SUFFIX)).write_text(key.sign((out / MANIFEST).read_bytes(), MANIFEST).file_text())
    return verify_release(str(out), key.public)


def verify_release(location: str, key: PublicKey) -> Manifest:
    """Check the manifest's signature and every file's SHA-256 and signature, as lnk does."""
    index = ReleaseIndex(location, key)
    manifest = index.manifest()
    for dist in manifest.distributions:
        for entry in dist.files:
            index.fetch(entry)
    return manifest
