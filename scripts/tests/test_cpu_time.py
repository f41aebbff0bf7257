"""`cpu_time.py` counts the CPU of what a command left running when it ended, as the suite's agents
are left (detached), and says what it had to leave behind."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent
SPIN = "import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end: pass\n"


def cpu_time(tmp_path: Path, command: str) -> tuple[int, dict[str, float]]:
    out = tmp_path / "used.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "cpu_time.py"), str(out), "sh", "-c", command], timeout=120, check=False
    )
    return done.returncode, json.loads(out.read_text())


def test_a_detached_process_is_counted_and_the_commands_code_kept(tmp_path: Path) -> None:
    spin = tmp_path / "spin.py"
    spin.write_text(SPIN.format(seconds=1.0))
    # The spinner outlives the shell, as a detached agent outlives `lnk agent start`.
    code, used = cpu_time(tmp_path, f"(sleep 0.3; '{sys.executable}' '{spin}') & exit 3")
    assert code == 3
    assert used["user"] + used["system"] >= 1.0
    assert used["left"] == 0


def test_a_process_still_running_after_the_grace_is_left_and_said(tmp_path: Path) -> None:
    script = tmp_path / "short_grace.py"
    script.write_text(
        f"import sys\nsys.path.insert(0, {str(SCRIPTS)!r})\nimport cpu_time\ncpu_time.GRACE = 0.5\n"
        "sys.exit(cpu_time.main(sys.argv[1:]))\n"
    )
    out = tmp_path / "used.json"
    done = subprocess.run(
        [sys.executable, str(script), str(out), "sh", "-c", "sleep 5 & exit 0"], timeout=60, check=False
    )
    assert done.returncode == 0
    assert json.loads(out.read_text())["left"] == 1
