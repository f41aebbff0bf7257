"""A kit that can't fail proves nothing: lnk-broken answers its proof with the key itself, and its
`describe` disagrees with its `ports`."""

from __future__ import annotations

import os
import subprocess
import sys


def test_kit_fails_the_broken_adapter_naming_the_rule() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--pyargs",
            "link_conformance",
            "--lnk-plugin",
            "lnk-broken",
            "-q",
            "-p",
            "no:cacheprovider",
            "-k",
            "TestHarness",
        ],
        capture_output=True,
        text=True,
        env=os.environ,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout[-3000:]
    assert "conformance rule 'proof' broken" in done.stdout
    assert "the answer holds the endpoint key" in done.stdout
    assert "FAILED" in done.stdout and "TestHarness::test_proof" in done.stdout
    assert "conformance rule 'harness-describe' broken" in done.stdout
    assert "it says `ports` answers count=2" in done.stdout


def test_kit_passes_mini_through_pyargs() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--pyargs",
            "link_conformance",
            "--lnk-plugin",
            "lnk-mini",
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        capture_output=True,
        text=True,
        env=os.environ,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert "failed" not in done.stdout
