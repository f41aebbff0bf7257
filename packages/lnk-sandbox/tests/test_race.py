"""The race that once showed a sandbox the user's whole home, run as an attacker would run it.

One real sandbox of an agent that writes `Home` swaps `Home/work` with a link to `../../../..`
(the user's home, seen from `Home`) as fast as it can, by atomic exchange, while the test starts
other sandboxes of the same agent (`run`, `check`, a health check) one after another. Each start
must show the real `work` folder or refuse with Link's error; none may show the home, Link's
settings or a key, write into the home, or end in a traceback. Bounded: 200 starts or 60 s.
"""

from __future__ import annotations

import threading
import time

from helpers import Link, Ran

from link_plugin.keys import KeyStore
from link_plugin.sandbox import SandboxRequest

KEY = "sk-race-secret"
STARTS = 200
SECONDS = 60.0
MARKER = "the owner's own file"
"""conftest's ~/notes.txt."""

ATTACK = """
import ctypes, os, sys, time
os.chdir(sys.argv[1])
os.symlink("../../../..", "work-link")
exchange = ctypes.CDLL(None, use_errno=True).renameat2
swapped = refused = 0
deadline = time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline and not os.path.exists("stop"):
    for _ in range(1000):
        if exchange(-100, b"work", -100, b"work-link", 2) == 0:
            swapped += 1
        else:
            refused += 1
        # The plain way too: move it aside, put the link in its place.
        try:
            os.rename("work", "work-aside")
            os.rename("work-link", "work")
            swapped += 1
        except OSError:
            refused += 1
print(swapped, refused)
"""


def probe(link: Link) -> str:
    """What a started sandbox tries: the home and the keys through `work` (and where the link
    would have put them), and writing there."""
    home = link.layout.agent("main").home
    keys = link.layout.agent_config("main").keys
    places = [home / "work", home / "work-link", link.home]
    reads = " ".join(f"{place}/notes.txt {place}/.config/lnk/agents/main/keys.json" for place in places)
    writes = "; ".join(f"touch {place}/planted-by-race 2>/dev/null" for place in places)
    return f"cat {home}/work/real.txt; cat {reads} {keys} 2>/dev/null; {writes}; echo probed"


def start(link: Link, kind: str, script: str) -> Ran:
    if kind == "check":
        return link.cli("check", "--agent", "main", "--json")
    if kind == "health":
        request = link.root / "health.json"
        request.write_text(
            SandboxRequest(agent="main", harness="mini", mode="health", argv=["sh", "-c", script]).to_json()
        )
        return link.cli("run", "--request", str(request))
    return link.cli("run", "--agent", "main", "--", "sh", "-c", script)


def test_swapping_its_work_folder_for_a_link_never_shows_another_sandbox_the_home(link: Link) -> None:
    KeyStore(link.layout.agent_config("main").keys).set("openai", KEY)
    folder = link.layout.agent("main")
    (folder.home / "work" / "real.txt").write_text("the real work folder\n")
    attacker: list[Ran] = []
    thread = threading.Thread(
        target=lambda: attacker.append(
            link.run(["python3", "-I", "-c", ATTACK, str(folder.home), str(SECONDS + 30)], writes=[str(folder.home)])
        )
    )
    thread.start()
    script = probe(link)
    results: list[tuple[str, Ran]] = []
    try:
        time.sleep(1.0)  # the attacker's loop is running
        deadline = time.monotonic() + SECONDS
        while len(results) < STARTS and time.monotonic() < deadline:
            kind = ("run", "check", "health")[len(results) % 3]
            results.append((kind, start(link, kind, script)))
    finally:
        (folder.home / "stop").touch()
        thread.join(timeout=120)

    assert attacker and attacker[0].code == 0, attacker
    swapped, tried = (int(n) for n in attacker[0].out.split())
    assert tried > 1000, attacker  # it raced the whole time...
    assert swapped == 0, attacker  # ...and never once moved its work folder: the folder is held in place
    shown = 0
    for kind, ran in results:
        said = ran.out + ran.err
        assert "Traceback" not in said, (kind, ran)
        assert MARKER not in said and KEY not in said, (kind, ran)
        if ran.code == 0:
            shown += 1
            if kind != "check":
                assert ran.out.startswith("the real work folder\n") and ran.out.endswith("probed\n"), (kind, ran)
        else:
            # Refused: Link's own error and exit code, nothing else.
            assert ran.code == (1 if kind == "check" else 125) and "lnk-sandbox:" in ran.err, (kind, ran)
    assert shown == len(results) >= 10, [ran for _, ran in results if ran.code != 0][:3]
    assert not list(link.home.glob("planted-by-race")) and not list(link.layout.config.rglob("planted-by-race"))
    assert (folder.home / "work").is_dir() and not (folder.home / "work").is_symlink()
