"""One machine for each pytest-xdist worker, set up as a person would set it up, once per session.

Link is built from this tree into a release signed with a throwaway key (once for the whole run:
the first worker to need it builds it, the other reuses it) and installed from it into a new
virtual environment of the worker's own; its plugins install on first use from the same release.
The model is the conformance kit's stand-in provider, reached only through the sandbox's proxy
(which alone holds its key); Telegram is the fake Bot API of lnk_testing.

The scenarios run in two groups, one worker each (`_StoryAndAside`): the story of the session's
agent (test_1 ... test_7_stop_and_delete), told in order on one machine, and beside it
`ASIDE`, the scenarios that mostly wait (a schedule's nine o'clock) or make homes of their own
(backup, TLS twins, a move), on the other worker's machine and its own agent.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

from lnk_e2e.machine import Machine
from lnk_e2e.model import Model
from lnk_e2e.pairing import Pairing, pair
from lnk_e2e.phone import Phone
from lnk_e2e.release import Release, build_release, install_lnk, read_release
from lnk_testing.telegram import FakeTelegram, User

AGENT = "assistant"
OWNER = User(4242, "Olivia", "olivia")
STRANGER = User(777, "Sam", "sam")
MACHINE = pytest.StashKey[Machine]()
RELEASES = pytest.StashKey[Path]()
"""The run's folder for the release, made by the process that starts the workers (or runs alone)."""
RELEASES_INPUT = "lnk_e2e_releases"
ASIDE = ("test_6_schedule.py", "test_7_backup.py", "test_8_tls.py", "test_9_move.py")
"""The scenarios run beside the story, on the other worker, with its own machine and agent; every
other file is the story, told in order on one worker. Balanced so that both take about as long."""


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


class _StoryAndAside(LoadScopeScheduling):
    """pytest-xdist's scheduling by scope, the scopes being the story and what runs beside it: each
    goes whole to one worker, its tests in their order."""

    def _split_scope(self, nodeid: str) -> str:
        return "aside" if Path(nodeid.split("::")[0]).name in ASIDE else "story"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LoadScopeScheduling:
    return _StoryAndAside(config, log)


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        config.stash[RELEASES] = Path(tempfile.mkdtemp(prefix="lnk-e2e-release-", dir="/tmp"))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Each pytest-xdist worker is told where the run's release is built."""
    node.workerinput[RELEASES_INPUT] = str(node.config.stash[RELEASES])


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(RELEASES, None)
    if folder is not None and not os.environ.get("LNK_E2E_KEEP"):
        shutil.rmtree(folder, ignore_errors=True)


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
def release(pytestconfig: pytest.Config) -> Release:
    """The run's release: built by the first worker to ask, under a lock the other waits on."""
    workerinput: dict[str, Any] | None = getattr(pytestconfig, "workerinput", None)
    folder = Path(workerinput[RELEASES_INPUT]) if workerinput else pytestconfig.stash[RELEASES]
    with (folder / "build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        keys = folder / "keys"
        if (keys / "release.pub").is_file() and not (keys / "release.key").exists():  # signed, its secret gone
            return read_release(folder / "release", keys)
        return build_release(folder / "release", keys)


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
