"""lnk-mini: the kit's reference harness, a minimal adapter and endpoint that passes every harness check.

Installed with the kit as console scripts, one per shape (the name it runs as picks it):

- `lnk-mini` passes the whole kit;
- `lnk-broken` answers its proof with the key itself and its `describe` says other ports than
  `ports` does: the kit must fail it, naming both rules;
- `lnk-wide` (three ports), `lnk-needy` (it needs `lan`), `lnk-risky` (it needs `open` and can't
  run without the `open-port` risk), `lnk-silent` (no endpoint: it speaks telegram itself),
  `lnk-counted` (it notes each command it is asked in `$HOME/asked`), `lnk-plain` (counted, and it
  answers neither install nor configure, as Link Harness) and `lnk-older` (counted, from before
  `describe`, to which it exits as to an unknown command): the shapes a core meets in the wild.

A core's tests drive these to check every path of its own; a harness's author reads `adapter.py`
(what Link asks) and `server.py` (the endpoint: the proof, the agent, the key, tool narrowing and
steering) as the smallest harness that keeps the contract.
"""
