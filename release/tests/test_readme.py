"""The install command the READMEs give installs this release's lnk from Link's published index."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from lnk import __version__
from lnk.release import DEFAULT_INDEX

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("readme", ["README.md", "packages/lnk-core/README.md"])
def test_the_install_command_pins_this_lnk_on_links_index(readme: str) -> None:
    text = (ROOT / readme).read_text()
    line = next(line for line in text.splitlines() if line.startswith("pipx install "))
    words = shlex.split(line)
    # Pinned: the name `lnk` on PyPI is another project's, and pip takes the highest version it sees.
    assert f"lnk=={__version__}" in words, f"{readme} installs {words[2]}, not lnk=={__version__}"
    assert words[words.index("--index-url") + 1] == f"{DEFAULT_INDEX}simple"
