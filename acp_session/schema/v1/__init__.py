"""Generated ACP v1 wire types (see ``schema/generate.py``); stable types are re-exported here.

Opt into unstable-only types and methods with ``from acp_session.schema.v1 import unstable``.
"""

from acp_session.schema.v1.types import *  # noqa: F403
from acp_session.schema.v1.types import AGENT_METHODS, CLIENT_METHODS  # noqa: F401

SCHEMA_SHA256 = "0d0b1ca83c4872e5473f68926a894c7a8203b59b118e2a79bfe43dd76fbcbc1a"
UNSTABLE_SCHEMA_SHA256 = "ce7881d10c854bcac4f0e7d3a9ce4fb0f612ec0a09e64b572940beec4668c189"
