"""A small release index made in a test: plugin wheels written by hand, signed by the real `minisign`.

Made without Link's release tool, so what lnk accepts is checked against minisign itself.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from lnk.release import Distribution, Manifest, ReleaseFile

PLUGIN_CODE = '''"""A channel plugin made by lnk's tests."""
from link_plugin.plugin import ChannelPlugin, run

VERSION = "{version}"


class Fixture(ChannelPlugin):
    name = "{name}"
    release = VERSION


def main() -> None:
    run(Fixture())
'''


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def make_wheel(folder: Path, dist: str, version: str) -> Path:
    """A wheel of a channel plugin whose console script is named as the distribution."""
    module = dist.replace("-", "_")
    info = f"{module}-{version}.dist-info"
    files = {
        f"{module}/__init__.py": PLUGIN_CODE.format(version=version, name=dist.removeprefix("lnk-")).encode(),
        f"{info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\nRequires-Dist: link-plugin>=0.1\n"
        ).encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: lnk-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": f"[console_scripts]\n{dist} = {module}:main\n".encode(),
    }
    record = [_record_line(path, data) for path, data in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


@dataclass(frozen=True)
class Minisign:
    """A throwaway key pair made by `minisign -G -W`, signing with `minisign -S`."""

    secret: Path
    public: Path

    @classmethod
    def generate(cls, folder: Path) -> Minisign:
        folder.mkdir(parents=True, exist_ok=True)
        key = cls(folder / "test.key", folder / "test.pub")
        subprocess.run(
            ["minisign", "-G", "-W", "-p", str(key.public), "-s", str(key.secret)], check=True, capture_output=True
        )
        return key

    def sign(self, path: Path, legacy: bool = False) -> Path:
        command = ["minisign", "-S", "-s", str(self.secret), "-m", str(path), "-t", f"file:{path.name}"]
        subprocess.run(command + (["-l"] if legacy else []), check=True, capture_output=True)
        return path.with_name(path.name + ".minisig")


def write_index(root: Path, key: Minisign, plugins: dict[str, str]) -> Path:
    """A signed release index holding one wheel per plugin (distribution -> version)."""
    files = root / "files"
    files.mkdir(parents=True)
    distributions = []
    for dist, version in plugins.items():
        wheel = make_wheel(files, dist, version)
        key.sign(wheel)
        data = wheel.read_bytes()
        entry = ReleaseFile(filename=wheel.name, kind="wheel", sha256=hashlib.sha256(data).hexdigest(), size=len(data))
        distributions.append(
            Distribution(name=dist, version=version, scripts=[dist], requires=["link-plugin>=0.1"], files=[entry])
        )
    manifest = Manifest(core="0.1.0", created=datetime.now(UTC), distributions=distributions)
    (root / "manifest.json").write_text(manifest.model_dump_json(indent=2))
    key.sign(root / "manifest.json")
    return root


def fresh_env(folder: Path) -> Path:
    """A new environment that sees this one's packages (lnk, pip) but installs into its own: its python."""
    shutil.rmtree(folder, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    own = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # addsitedir, so the editable installs (.pth files) of this environment count too.
    Path(own, "_outer.pth").write_text(f"import site; site.addsitedir({sysconfig.get_path('purelib')!r})\n")
    return python
