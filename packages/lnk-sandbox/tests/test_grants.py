"""The agent's grants file: what allow and deny write, and every line it can't enforce refused by line."""

from __future__ import annotations

import json
import tomllib

import pytest
from helpers import Link


def grants_file(link: Link) -> dict[str, object]:
    return tomllib.loads(link.layout.agent_config("main").sandbox.read_text())


def test_allow_and_deny_mirror_each_other(link: Link) -> None:
    assert link.cli("allow", "read-home", "--agent", "main").code == 0
    assert grants_file(link) == {"allow": ["read-home"]}
    assert link.cli("deny", "read-home", "--agent", "main").code == 0
    assert grants_file(link) == {"deny": ["read-home"]}
    assert link.cli("allow", "read-home", "--agent", "main").code == 0
    assert grants_file(link) == {"allow": ["read-home"]}


def test_allow_json_says_the_grants_now_in_force(link: Link) -> None:
    found = json.loads(link.cli("deny", "network", "--agent", "main", "--json").out)
    assert found["permissions"]["network"] is False and found["permissions"]["developer-tools"] is True


def test_a_named_endpoint_is_allowed_and_taken_back(link: Link) -> None:
    assert link.cli("allow", "tcp", "GitHub.com:22", "--agent", "main").code == 0
    assert grants_file(link) == {"tcp": ["github.com:22"]}
    assert link.cli("deny", "tcp github.com:22", "--agent", "main").code == 0
    assert grants_file(link) == {}


@pytest.mark.parametrize("endpoint", ["github.com", "github.com:0", "github.com:99999", "*:22", ":22"])
def test_a_bad_endpoint_is_refused(link: Link, endpoint: str) -> None:
    ran = link.cli("allow", "tcp", endpoint, "--agent", "main")
    assert ran.code == 1 and ("endpoint" in ran.err or "port" in ran.err)
    assert not link.layout.agent_config("main").sandbox.exists()


def test_hosts_make_a_list_and_star_means_any(link: Link) -> None:
    link.cli("allow", "host", "api.openai.com", "--agent", "main")
    link.cli("allow", "host", "*.github.com", "--agent", "main")
    assert grants_file(link) == {"hosts": ["api.openai.com", "*.github.com"]}
    link.cli("deny", "host", "api.openai.com", "--agent", "main")
    link.cli("deny", "host", "*.github.com", "--agent", "main")
    assert grants_file(link) == {"hosts": []}
    link.cli("allow", "host", "*", "--agent", "main")
    assert grants_file(link) == {}


def test_denying_a_host_with_no_list_is_refused(link: Link) -> None:
    ran = link.cli("deny", "host", "example.com", "--agent", "main")
    assert ran.code == 1 and "reaches any host" in ran.err


def test_no_sandbox_is_not_the_agents_to_allow(link: Link) -> None:
    ran = link.cli("allow", "unsandboxed", "--agent", "main")
    assert ran.code == 1 and "lnk agent <harness> allow unsandboxed" in ran.err


def test_an_unknown_permission_is_refused(link: Link) -> None:
    ran = link.cli("allow", "read-hom", "--agent", "main")
    assert ran.code == 1 and "'read-hom' is not a permission" in ran.err


def test_an_unknown_agent_is_refused(link: Link) -> None:
    ran = link.cli("allow", "lan", "--agent", "nobody")
    assert ran.code == 1 and "no agent named 'nobody'" in ran.err


@pytest.mark.parametrize(
    ("text", "line", "said"),
    [
        ('allow = ["lan"]\n\n[commands]\nallow = ["rm"]\n', 3, "[commands] is not a grant"),
        ('[files]\nread = ["instructions"]\nwrite = ["work"]\n', 3, "[files] write is not a grant"),
        ('deny = ["network"]\nallow = ["lna"]\n', 2, "'lna' is not a permission"),
        ('hosts = ["exa mple.com"]\n', 1, "is not a host"),
        ('[files]\nread = ["secrets"]\n', 2, "'secrets' is not a folder of Home"),
        ('allow = ["unsandboxed"]\n', 1, "no sandbox is not the agent's grant"),
    ],
)
def test_a_line_the_sandbox_cant_enforce_is_refused_naming_it(link: Link, text: str, line: int, said: str) -> None:
    link.grants("main", text)
    for ran in (link.cli("grants", "--agent", "main"), link.cli("run", "--agent", "main", "--", "true")):
        assert ran.code != 0
        assert f"sandbox.toml, line {line}" in ran.err and said in ran.err, ran


def test_a_harness_file_line_it_cant_enforce_is_refused_naming_it(link: Link) -> None:
    link.harness_grants("mini", 'allow = ["lan"]\nports = [1]\n')
    ran = link.cli("grants", "--agent", "main", "--harness", "mini")
    assert ran.code == 1 and "mini.toml, line 2: `ports` is not a grant" in ran.err


def test_grants_say_when_a_host_list_doesnt_hold(link: Link) -> None:
    link.grants("main", 'allow = ["lan"]\nhosts = ["example.com"]\n')
    found = json.loads(link.cli("grants", "--agent", "main", "--json").out)
    assert found["proxied"] is False and any("host list doesn't hold" in w for w in found["warnings"])


def test_grants_for_people_read_as_lines(link: Link) -> None:
    link.grants("main", 'tcp = ["github.com:22"]\n')
    ran = link.cli("grants", "--agent", "main")
    assert "network          on" in ran.out and "tcp              github.com:22" in ran.out
