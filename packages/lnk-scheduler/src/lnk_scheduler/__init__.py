"""Link Scheduler: messages for an agent from someone who isn't its owner, now or later.

A subagent's task, a schedule and a message from another agent of the same owner are one thing:
a message held until it is due, then said to the agent as someone else's (`Link-From`, with
`Link-Hops`). The tool (`server`) writes what is due into the agent's state folder (`store`);
the runner (`runner`), run beside the agent's channel bridges, says each when it is due and
sends its answer where it goes (`routes`).
"""

__version__ = "0.1.0"
