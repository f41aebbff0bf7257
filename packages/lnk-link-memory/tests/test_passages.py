"""What a search hit shows: the passage holding the words, from its section's heading, and the line
it starts on, where a read picks it up. Passages break at headings, then between paragraphs."""

from __future__ import annotations

from conftest import MakeMemory, write
from lnk_link_memory.limits import CHUNK_CHARS
from lnk_link_memory.memory import Memory

from link_plugin.layout import AgentFolder

TRIP = """# Trip

We go to the islands in June.

## Packing

Bring the kayak paddles.
And the dry bags.

## Route

The ferry leaves at nine.
"""

SETUP = """# Setup

Run the installer:

```sh
# marmot: the script's own comment, no heading
./install
```

Then restart the machine.
"""


def _hit(memory: Memory, words: str) -> tuple[int, str]:
    hits = memory.search(words).results
    assert len(hits) == 1, hits
    return hits[0].line, hits[0].text


def test_a_hit_is_its_section_from_the_heading_and_a_read_starts_there(
    agent: AgentFolder, memory_of: MakeMemory
) -> None:
    write(agent.memory / "trip.md", TRIP)
    memory = memory_of(agent)
    memory.scan()
    line, text = _hit(memory, "kayak")
    assert (line, text) == (5, "## Packing\n\nBring the kayak paddles.\nAnd the dry bags.")
    assert memory.read("memory/trip.md", start=line).text.startswith("## Packing\n")
    assert _hit(memory, "ferry") == (10, "## Route\n\nThe ferry leaves at nine.")


def test_a_hash_inside_a_code_block_starts_no_section(agent: AgentFolder, memory_of: MakeMemory) -> None:
    write(agent.memory / "setup.md", SETUP)
    memory = memory_of(agent)
    memory.scan()
    line, text = _hit(memory, "marmot")
    assert line == 1
    assert text.startswith("# Setup\n\nRun the installer:") and text.endswith("Then restart the machine.")


def test_lines_broken_the_windows_way_give_the_same_passages(agent: AgentFolder, memory_of: MakeMemory) -> None:
    (agent.memory / "trip.md").write_bytes(TRIP.replace("\n", "\r\n").encode())
    memory = memory_of(agent)
    memory.scan()
    assert _hit(memory, "kayak") == (5, "## Packing\n\nBring the kayak paddles.\nAnd the dry bags.")


def test_a_long_section_breaks_between_paragraphs(agent: AgentFolder, memory_of: MakeMemory) -> None:
    paragraphs = [" ".join([word] + ["filler words"] * 50) for word in ("albatross", "bittern", "cormorant")]
    write(agent.memory / "birds.md", "# Birds\n\n" + "\n\n".join(paragraphs) + "\n")
    memory = memory_of(agent)
    memory.scan()
    first_line, first = _hit(memory, "albatross")
    assert first_line == 1 and first == "# Birds\n\n" + paragraphs[0] + "\n\n" + paragraphs[1]
    assert len(first) <= CHUNK_CHARS
    assert _hit(memory, "cormorant") == (7, paragraphs[2])


def test_a_line_longer_than_a_passage_is_cut_between_words(agent: AgentFolder, memory_of: MakeMemory) -> None:
    words = [f"w{i:04d}" for i in range(CHUNK_CHARS)]
    words.insert(1000, "zebrafinch")
    write(agent.memory / "long.md", " ".join(words) + "\n")
    memory = memory_of(agent)
    memory.scan()
    line, text = _hit(memory, "zebrafinch")
    assert line == 1 and CHUNK_CHARS // 2 <= len(text) <= CHUNK_CHARS
    assert set(text.split()) <= set(words)  # whole words: none cut in two
