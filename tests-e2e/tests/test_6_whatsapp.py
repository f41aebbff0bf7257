"""6. The owner connects WhatsApp: lnk-whatsapp installs on first use from the signed release, says
the risk, takes the owner's number and links the device (the fake engine plays the phone
accepting it), its state in the agent's channel folder under Link's settings, out of every
harness's home; then one message each way between the owner's WhatsApp and the same agent, its
harness in the sandbox."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import AGENT
from test_6_channels import ask, carrying

from lnk_e2e.machine import Machine
from lnk_e2e.model import Model
from lnk_testing.whatsapp import ACCOUNT, PAIR_CODE, FakeWhatsApp, chat_of

OWNER = "15550001234"
ENGINE = "LNK_WHATSAPP_ENGINE"


@pytest.fixture(scope="module")
def whatsapp(machine: Machine) -> Iterator[FakeWhatsApp]:
    with FakeWhatsApp(linked=False) as fake:
        machine.env[ENGINE] = fake.command  # the bridge starts from connect's environment
        yield fake


def test_whatsapp_links_as_a_device_and_carries_one_message_each_way(
    machine: Machine, agent: str, model: Model, whatsapp: FakeWhatsApp
) -> None:
    connecting = machine.spawn("agent", "connect", "whatsapp", AGENT, "--token-stdin")
    assert connecting.stdin is not None and connecting.stdout is not None
    connecting.stdin.write(f"+{OWNER}\n+{ACCOUNT}\n")
    connecting.stdin.close()
    said: list[str] = []
    for line in connecting.stdout:
        said.append(line)
        if PAIR_CODE in line:
            whatsapp.link()  # the code typed on the phone: it accepts the device
            break
    said += connecting.stdout
    shown = "".join(said)
    assert connecting.wait(timeout=300) == 0, f"connect whatsapp failed ({connecting.returncode}):\n{shown}"
    assert shown.index("not through Meta's business API") < shown.index(PAIR_CODE), "the risk, said first"
    assert whatsapp.paired == [ACCOUNT] and f"answers +{OWNER}" in shown

    folder = machine.config / "agents" / AGENT / "channels" / "whatsapp"
    # connect's engine, then (once the agent starts again) its bridge's: each in that folder alone
    assert whatsapp.folders[:1] == [str(folder)], "linked into the agent's channel folder, under Link's settings"
    assert set(whatsapp.folders) == {str(folder)}, "every engine of the agent in its channel folder"
    assert folder.stat().st_mode & 0o777 == 0o700
    assert not folder.is_relative_to(machine.folder(AGENT)), "out of the agent's folder and its harnesses' homes"
    carrying(machine, "whatsapp")
    assert whatsapp.folders[1:] == [str(folder)], "the bridge's engine runs on the same device"

    answer = ask(
        model,
        lambda: whatsapp.dm(OWNER, "Hello from WhatsApp"),
        lambda answer: answer in whatsapp.texts(chat_of(OWNER)),
        calls=1,
    )
    assert answer == "You said: Hello from WhatsApp"
    assert whatsapp.texts(chat_of(OWNER)) == [answer], "sent whole, once"
    conversations = {c.name for c in (machine.folder(AGENT) / "chats").iterdir()}
    assert f"whatsapp:{chat_of(OWNER)}" in conversations, "a conversation of its own"
    entry = machine.status(AGENT)["channels"]["whatsapp"]
    assert entry["identity"] == f"whatsapp:{ACCOUNT}"
