"""One machine for the whole suite, set up as a person would set it up, once per session.

Link is built from this tree into a release signed with a throwaway key and installed from it into
a new virtual environment; its plugins install on first use from the same release. The model is the
conformance kit's stand-in provider, reached only through the sandbox's proxy (which alone holds
its key); Telegram is the fake Bot API of lnk_testing. The scenarios (test_1 ... test_8) then tell
one story on that machine, in order.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from lnk_e2e.machine import Machine
from lnk_e2e.model import Model
from lnk_e2e.pairing import Pairing, pair
from lnk_e2e.phone import Phone
from lnk_e2e.release import Release, build_release, install_lnk
from lnk_testing.telegram import FakeTelegram, User

AGENT = "assistant"
OWNER = User(4242, "Olivia", "olivia")
STRANGER = User(777, "Sam", "sam")
MACHINE = pytest.StashKey[Machine]()


def _why_no_bubblewrap() -> str | None:
    """Why bubblewrap can't make a sandbox here, or None when it can."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    probe = subprocess.run(["bwrap", "--unshare-all", "--ro-bind", "/", "/", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"bubblewrap can't make a sandbox here: {probe.stderr.strip()}"
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    reason = _why_no_bubblewrap()
    if reason is not None:
        for item in items:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed scenario's report carries the newest lines of Link's logs: what a person would read."""
    report = yield
    machine = item.config.stash.get(MACHINE, None)
    if report.failed and machine is not None:
        for name, text in machine.logs().items():
            report.sections.append((f"Link's log {name}", text))
    return report


@pytest.fixture(scope="session")
def root() -> Iterator[Path]:
    # Short, so unix sockets under it stay within their 108-byte limit.
    folder = Path(tempfile.mkdtemp(prefix="lnk-e2e-", dir="/tmp"))
    yield folder
    if os.environ.get("LNK_E2E_KEEP"):
        print(f"\nLNK_E2E_KEEP: the machine's folder is kept at {folder}")
        return
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def release(root: Path) -> Release:
    return build_release(root / "release", root / "keys")


@pytest.fixture(scope="session")
def model_key() -> str:
    return "sk-e2e-" + secrets.token_hex(16)


@pytest.fixture(scope="session")
def model(model_key: str) -> Iterator[Model]:
    started = Model(model_key).start()
    yield started
    started.stop()


@pytest.fixture(scope="session")
def telegram() -> Iterator[FakeTelegram]:
    with FakeTelegram() as fake:
        yield fake


@pytest.fixture(scope="session")
def machine(
    request: pytest.FixtureRequest, root: Path, release: Release, model: Model, telegram: FakeTelegram
) -> Iterator[Machine]:
    made = Machine(root, install_lnk(release, root / "venv"), release, model.origin, telegram.origin)
    request.config.stash[MACHINE] = made
    try:
        yield made
    finally:
        made.close()


@pytest.fixture(scope="session")
def agent(machine: Machine, model_key: str) -> str:
    """The agent, started in its sandbox with Link Harness and Link Memory, its model key with Link only."""
    machine.lnk("agent", "keys", "set", "openai", AGENT, "--stdin", input=model_key)
    machine.lnk("agent", "memory", "start", "link", AGENT)
    machine.lnk("agent", "start", AGENT)
    return AGENT


@pytest.fixture(scope="session")
def paired(machine: Machine, agent: str, telegram: FakeTelegram) -> Pairing:
    """`lnk agent connect telegram`: the token on stdin, the code from the terminal, sent by the owner."""
    return pair(machine, agent, telegram, OWNER)


@pytest.fixture
def owner(paired: Pairing, telegram: FakeTelegram) -> Phone:
    return Phone(telegram, OWNER)


@pytest.fixture
def stranger(paired: Pairing, telegram: FakeTelegram) -> Phone:
    return Phone(telegram, STRANGER)
