"""Link Harness beside the outside harnesses, under lnk: start to first answer, and resident memory.

    python benchmarks/harnesses.py [--runs 3]

One agent, in its sandbox, its model the conformance kit's stand-in provider (which answers at
once), switched in turn to each harness installed here (`lnk agent use`): Link Harness, then
Hermes Agent (lnk-hermes, adapters/), then OpenClaw (lnk-openclaw). Each is started once first
(installed, configured, its adapter's answers kept); then each run starts the agent, takes the
first byte of `lnk agent chat -m hi`'s answer, reads the harness's resident memory (every process
under the agent's supervisor but the supervisor itself) and stops it. Anchor in the same run:
`python -c pass`. Link Harness must stay the fastest and the smallest.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys

from common import AGENT, Link, load, python_pass, throwaway_link
from start import agent_processes, command_of, rss_mib, start_to_token, stop

HARNESSES = {"link": "Link Harness", "hermes": "Hermes Agent 0.19.0", "openclaw": "OpenClaw 2026.9.6"}
OUTSIDE = {"hermes": "lnk_hermes", "openclaw": "lnk_openclaw"}


def harness_mib(link: Link) -> float:
    """The harness's processes: all of the agent's but lnk's own supervisor."""
    return sum(rss_mib(pid) for pid in agent_processes(link) if "-m lnk " not in command_of(pid) + " ")


def measure(link: Link, name: str, runs: int) -> tuple[float, float]:
    """(median seconds from `lnk agent start` to chat's first byte, median harness MiB after it)."""
    link.lnk("agent", "use", name, AGENT, "--yes")
    link.lnk("agent", "start", AGENT)  # installed and configured once, its answers kept
    link.lnk("agent", "chat", AGENT, "-m", "warm")
    stop(link)
    times, sizes = [], []
    for _ in range(runs):
        up, token, _ = start_to_token(link)
        times.append(up + token)
        sizes.append(harness_mib(link))
        stop(link)
    return statistics.median(times), statistics.median(sizes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(load())
    anchor = python_pass()
    print(f"python -c pass: {anchor * 1000:.0f} ms")
    found = {}
    with throwaway_link() as link:
        for name, title in HARNESSES.items():
            if name in OUTSIDE and importlib.util.find_spec(OUTSIDE[name]) is None:
                print(f"{title}: its adapter isn't installed here, so it isn't measured")
                continue
            found[name] = measure(link, name, args.runs)
    print(f"\nunder lnk, in the sandbox, median of {args.runs}:")
    print(f"  {'harness':<22} {'start -> first answer':>22} {'resident':>10}")
    for name, (seconds, mib) in found.items():
        print(f"  {HARNESSES[name]:<22} {seconds:>10.2f} s ({seconds / anchor:4.0f}x) {mib:>7.0f} MiB")
    link_seconds, link_mib = found["link"]
    slower = [n for n, (s, m) in found.items() if n != "link" and (s <= link_seconds or m <= link_mib)]
    print(load())
    if slower:
        sys.exit(f"Link Harness is not the fastest and smallest: {', '.join(slower)} matched it")


if __name__ == "__main__":
    main()
