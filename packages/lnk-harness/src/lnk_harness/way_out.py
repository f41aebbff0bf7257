"""Whether the sandbox's way out still stands, asked when the model's or a tool's connection broke.

In Link's sandbox the harness reaches its model through the sandbox's proxy (`LNK_PROXY`, on the
sandbox's own loopback), whose connections the sandbox's relay carries out to the proxy outside.
When one of the processes that keep the sandbox ends (the relay, its PID 1; bubblewrap; the
`lnk-sandbox run` the proxy lives in), the connections it carried close at once, and the harness
ends a moment later, with the rest of the sandbox. In that moment a connection closed under the
harness looks like a model that failed mid-answer, and a harness that wrote that down would leave
the owner an error in place of the answer the harness started after it gives. Tools are reached
through the same way out (the proxy serves them on its port): a tool call cut this way, written
down as the tool's failure, would be shown to the model as the call's answer, where the harness
started after it says the call was made and not made again.

So before a broken connection becomes the turn's answer or a call's result (`leave_if_gone`), the
harness asks the proxy anything
(`GET /`, which Link's proxy refuses with 403): a proxy that answers stands, and the model failed.
One that refuses the connection, or closes it unanswered, is gone for good: nothing brings a
sandbox's proxy or relay back but a new sandbox. That harness ends (`end`), and its turn is left
to the next one, as a harness stopped mid-turn leaves it. A proxy that answers nothing in time is
taken as standing: the model's failure is said, as without a sandbox.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Mapping
from urllib.parse import urlsplit

from link_plugin.waits import within

log = logging.getLogger("lnk_harness.way_out")

ENV_PROXY = "LNK_PROXY"
"""The sandbox's proxy, as lnk-sandbox names it to what runs inside (contract-spec/sandbox.md)."""
ASK_WITHIN = 5.0
"""Seconds the proxy has to answer; a sandbox that is ending refuses or closes at once."""


async def gone(env: Mapping[str, str] = os.environ, timeout: float = ASK_WITHIN) -> bool:
    """Whether the sandbox's proxy is gone for good; False outside a sandbox (no `LNK_PROXY`)."""
    address = urlsplit(env.get(ENV_PROXY) or "")
    if address.hostname is None or address.port is None:
        return False
    try:
        reader, writer = await within(asyncio.open_connection(address.hostname, address.port), timeout)
    except TimeoutError:
        return False
    except OSError:
        return True  # nothing listens where the proxy was: the relay is gone
    try:
        writer.write(f"GET / HTTP/1.1\r\nHost: {address.netloc}\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        said = await within(reader.read(5), timeout)
    except TimeoutError:
        return False
    except OSError:
        return True
    finally:
        writer.close()
    return not said.startswith(b"HTTP/")


async def leave_if_gone(why: str) -> None:
    """End this harness when the sandbox's proxy is gone, `why` being what broke; else return at
    once. Once ended it never returns: the stop cancels the caller's turn, which hands it over."""
    if await gone():
        end(f"{why}, and the sandbox's proxy is gone")
        await asyncio.Event().wait()


def end(why: str) -> None:
    """End this harness as Link stops it (SIGTERM): the turns it runs are handed over to the next."""
    log.warning("%s: ending, so that Link starts the harness again in a new sandbox", why)
    os.kill(os.getpid(), signal.SIGTERM)
