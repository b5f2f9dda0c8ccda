"""The protocol v2 checks, one module per rule area (``registry.AREAS``, the areas of docs/conformance.md's tables),
imported here in that order, which registers them. A new check goes into its area's module.

Each check cites the rules it verifies (``ACP2-NNN`` from rules-v2.md, ``schema:X``, ``page.mdx#anchor`` of the v2
docs) and fails only where the spec says MUST; a SHOULD the agent does not follow is a warning, and behaviour the
spec leaves to the agent is a note or "not applicable". Checks that need the agent to do something a client cannot
request (run long, ask for permission, start background work) use the scenario file's prompts; without one they
are not applicable.
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
from . import background_work
# isort: on

__all__ = [
    "background_work",
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
