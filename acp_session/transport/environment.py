"""Which of this process's environment variables a spawned agent gets.

``inherit`` (the default) passes everything: real agents read their API keys, proxies and configuration from
it, and a client that withholds them cannot run them. ``minimal`` passes only what a program needs to run
(PATH, HOME and the user's identity, the locale, the terminal, the temporary directory) plus the variables the
caller names, so an untrusted agent never sees the caller's other secrets. An explicit mapping is used as given.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Literal

__all__ = ["MINIMAL_VARIABLES", "EnvPolicy", "agent_environment"]

EnvPolicy = Literal["inherit", "minimal"]

MINIMAL_VARIABLES = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TMPDIR", "TZ")
"""What ``minimal`` passes, when set here, besides every ``LC_*`` locale variable and the names the caller gives."""


def agent_environment(
    policy: EnvPolicy | Mapping[str, str] = "inherit", pass_env: Iterable[str] = ()
) -> dict[str, str] | None:
    """The environment for a spawned agent: None means this process's own (``inherit``)."""
    if not isinstance(policy, str):
        return dict(policy)
    if policy == "inherit":
        return None
    if policy != "minimal":
        raise ValueError(f"env policy must be 'inherit', 'minimal' or a mapping (got {policy!r})")
    names = set(MINIMAL_VARIABLES) | set(pass_env)
    env = {name: value for name, value in os.environ.items() if name in names or name.startswith("LC_")}
    env.setdefault("PATH", os.defpath)
    return env
