"""Asking the owner for what a harness needs, once, in a terminal, and keeping the answers.

A need the agent already has is never asked. One answered before (allowed or denied) isn't asked
again until `repermit` forgets it; only what is new is. Without a terminal the owner can't be
asked: `--yes` answers yes for them, except to a need for no sandbox, which only
`--allow-unsandboxed` answers. An optional risk turns on only with a yes typed in a terminal.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TextIO

from link_plugin.errors import LinkError
from link_plugin.harness import Need, Needs, Risk
from link_plugin.layout import Layout
from link_plugin.permissions import Permission
from link_plugin.sandbox import Decision
from lnk_sandbox import grants as layers
from lnk_sandbox.permissions import what

WARN = "\033[33m"
RESET = "\033[0m"


@dataclass
class Terminal:
    """The owner at a terminal: questions on stderr (stdout holds the answer), replies on stdin."""

    reader: TextIO
    writer: TextIO

    @classmethod
    def attached(cls) -> Terminal | None:
        return cls(sys.stdin, sys.stderr) if sys.stdin.isatty() else None

    def say(self, text: str, warn: bool = False) -> None:
        colour = warn and self.writer.isatty()
        self.writer.write(f"{WARN}{text}{RESET}\n" if colour else f"{text}\n")
        self.writer.flush()

    def yes(self, question: str, warn: bool = False) -> bool:
        self.writer.write(f"{WARN if warn and self.writer.isatty() else ''}{question} [y/N] ")
        self.writer.write(RESET if warn and self.writer.isatty() else "")
        self.writer.flush()
        reply = self.reader.readline()
        if not reply:
            raise LinkError("The terminal closed before an answer: nothing was changed.")
        return reply.strip().lower() in ("y", "yes")


def _question_for_need(harness: str, need: Need, agents: list[str]) -> tuple[str, str]:
    running = f"It holds for every agent here running {harness}: {', '.join(agents) or 'none yet'}."
    if need.name == Permission.UNSANDBOXED:
        about = f"{harness} asks to run without a sandbox: {need.why}\n  {what(need.name)}\n  {running}"
        return about, f"Run {harness} without a sandbox?"
    about = f"{harness} asks for {need.name}: {need.why}\n  On this machine {need.name} gives: {what(need.name)}"
    return f"{about}\n  {running}", f"Allow {need.name} for {harness}?"


def _question_for_risk(harness: str, risk: Risk, agents: list[str]) -> tuple[str, str]:
    about = f"{harness} names a risk, {risk.name}: {risk.why}"
    if risk.optional:
        about += f"\n  Without it: {risk.without or 'it runs without it'}."
    running = f"It holds for every agent here running {harness}: {', '.join(agents) or 'none yet'}."
    return f"{about}\n  {running}", f"Allow {risk.name} for {harness}?"


def decide(
    layout: Layout,
    agent: str,
    harness: str,
    needs: Needs,
    *,
    terminal: Terminal | None,
    yes: bool = False,
    allow_unsandboxed: bool = False,
) -> Decision:
    """Ask what is new, keep the answers with the needs they answered, and say what holds."""
    has = layers.load_agent(layout, agent).permissions
    kept = layers.load_harness(layout, harness)
    forbidden = layers.machine_forbids_unsandboxed(layout)
    wanted = {need.name for need in needs.permissions}
    if Permission.UNSANDBOXED in wanted and forbidden:
        raise LinkError(
            f"{harness} needs to run without a sandbox, and this machine forbids it "
            f"(unsandboxed = false in {layout.machine}).",
            "Use a harness that runs in a sandbox: no grant, made now or before, changes this.",
        )
    new_needs = [n for n in needs.permissions if n.name not in has and not kept.answered(n.name)]
    new_risks = [r for r in needs.risks if not kept.answered(r.name)]
    unanswerable = [
        n.name
        for n in new_needs
        if terminal is None and not (allow_unsandboxed if n.name == Permission.UNSANDBOXED else yes)
    ]
    unanswerable += [r.name for r in new_risks if terminal is None and not r.optional and not yes]
    if unanswerable:
        flags = "--allow-unsandboxed" if unanswerable == [Permission.UNSANDBOXED.value] else "--yes"
        if Permission.UNSANDBOXED in unanswerable and flags == "--yes":
            flags = "--yes (and --allow-unsandboxed for no sandbox)"
        raise LinkError(
            f"{harness} needs {', '.join(unanswerable)}, and there is no terminal to ask the owner.",
            f"Run it in a terminal to answer, or pass {flags} to allow it from a script.",
        )
    agents = layers.agents_running(layout, harness) if new_needs or new_risks else []
    asked: list[str] = []

    def ask(about: str, question: str, warn: bool) -> bool:
        assert terminal is not None, "what no flag answers was refused above without a terminal"
        terminal.say(about, warn=warn)
        asked.append(question)
        return terminal.yes(question, warn=warn)

    answers = kept.model_dump()
    for need in new_needs:
        unsandboxed = need.name == Permission.UNSANDBOXED
        answered = allow_unsandboxed if unsandboxed else yes
        allowed = answered or ask(*_question_for_need(harness, need, agents), warn=unsandboxed)
        answers["allow" if allowed else "deny"].append(need.name)
        answers["needs"][need.name] = need.why
    for risk in new_risks:
        if (terminal is None or yes) and risk.optional:
            continue  # off is safe: only a yes typed in a terminal turns an optional risk on
        allowed = yes or ask(*_question_for_risk(harness, risk, agents), warn=True)
        answers["risks" if allowed else "risks_denied"].append(risk.name)
        answers["needs"][risk.name] = risk.why
    updated = layers.HarnessGrants.model_validate(answers)
    if updated != kept:
        layers.save_harness(layout, harness, updated)
    return Decision(
        granted=sorted(n for n in wanted if n in has or n in updated.allow),
        denied=sorted(n for n in wanted if n not in has and n in updated.deny),
        risks=sorted(r.name for r in needs.risks if r.name in updated.risks),
        asked=bool(asked),
    )
