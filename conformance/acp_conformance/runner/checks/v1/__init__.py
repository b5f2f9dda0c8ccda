"""The protocol v1 checks, one module per rule area (``registry.AREAS``, the areas of docs/conformance.md's tables),
imported here in that order, which registers them. A new check goes into its area's module.

An agent that answers ``initialize`` with version 1 is judged by these, against ``ACP1-NNN`` rules (rules-v1.md),
the v1 schema (``schema:X``) and the v1 docs (``page.mdx#anchor``). Version 1 has no ``messageId``, no
``state_update``: a turn is the pending ``session/prompt``, which the agent answers with a stop reason when the
turn is over. Methods beyond the baseline (``session/load``, ``/list``, ``/resume``, ``/close``, ``/delete``) are
checked only when advertised. The agent's ``fs/*`` and ``terminal/*`` calls are answered by the runner inside the
check's sandbox directory, through the library's providers, and judged for their shape (``client_methods``).
"""

# The areas in report order, the order they register in.
# isort: off
from . import transport
from . import initialization
from . import sessions
from . import prompt_turn
from . import permissions_tools
from . import cancellation
from . import close_resume
from . import client_methods
from . import config_modes
from . import errors_extensibility
# isort: on

__all__ = [
    "cancellation",
    "client_methods",
    "close_resume",
    "config_modes",
    "errors_extensibility",
    "initialization",
    "permissions_tools",
    "prompt_turn",
    "sessions",
    "transport",
]
