"""Generated ACP v2 wire types (see ``schema/generate.py``); stable types are re-exported here.

Opt into unstable-only types and methods with ``from acp_session.schema import unstable``.
"""

from acp_session.schema.types import *  # noqa: F403
from acp_session.schema.types import AGENT_METHODS, CLIENT_METHODS  # noqa: F401

SCHEMA_SHA256 = "b6c91055df549d6f1db1d76d692d0561dad433e03d8ed114ea9b5baed9da72c5"
UNSTABLE_SCHEMA_SHA256 = "49e10f8c1935854363ed5b176cc6560d856642ba5020c97d264d34de4b6f1b31"
