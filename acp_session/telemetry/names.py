"""The span, metric and attribute names the instrumentation emits, in one table (docs/observability.md lists them).

``gen_ai.*`` names are the OpenTelemetry GenAI semantic conventions' (agent and tool spans, client metrics);
``acp.*`` names are this library's, for what those conventions do not name.
"""

from __future__ import annotations

__all__ = [
    "AGENT_NAME",
    "AGENT_VERSION",
    "CONVERSATION_ID",
    "FINISH_REASONS",
    "OPERATION_NAME",
    "TOOL_CALL_ID",
    "TOOL_NAME",
    "USAGE_INPUT_TOKENS",
    "USAGE_OUTPUT_TOKENS",
]

# -- GenAI semantic conventions -----------------------------------------------------------------------------
OPERATION_NAME = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"
AGENT_VERSION = "gen_ai.agent.version"
CONVERSATION_ID = "gen_ai.conversation.id"
FINISH_REASONS = "gen_ai.response.finish_reasons"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOKEN_TYPE = "gen_ai.token.type"
INVOKE_AGENT = "invoke_agent"
EXECUTE_TOOL = "execute_tool"
METRIC_DURATION = "gen_ai.client.operation.duration"
METRIC_FIRST_CHUNK = "gen_ai.client.operation.time_to_first_chunk"
METRIC_TOKENS = "gen_ai.client.token.usage"

# -- JSON-RPC (the RPC semantic conventions) -----------------------------------------------------------------
RPC_SYSTEM = "rpc.system"
RPC_METHOD = "rpc.method"
RPC_ERROR_CODE = "rpc.jsonrpc.error_code"
ERROR_TYPE = "error.type"

# -- ACP ---------------------------------------------------------------------------------------------------------
PROTOCOL_VERSION = "acp.protocol.version"
SESSION_ID = "acp.session.id"
STOP_REASON = "acp.stop_reason"
CHUNKS = "acp.turn.chunks"
UPDATES = "acp.turn.updates"
TOOL_CALLS = "acp.turn.tool_calls"
TOTAL_TOKENS = "acp.usage.total_tokens"
THOUGHT_TOKENS = "acp.usage.thought_tokens"
CONTEXT_USED = "acp.context.used"
CONTEXT_SIZE = "acp.context.size"
TIME_TO_FIRST_CHUNK = "acp.turn.time_to_first_chunk"
TOOL_KIND = "acp.tool_call.kind"
TOOL_STATUS = "acp.tool_call.status"
TOOL_TITLE = "acp.tool_call.title"
TOOL_DURATION = "acp.tool_call.duration"
PERMISSION_TITLE = "acp.permission.title"
PERMISSION_OUTCOME = "acp.permission.outcome"
PERMISSION_OPTION_ID = "acp.permission.option_id"
PERMISSION_OPTION_KIND = "acp.permission.option_kind"
PERMISSION_WAIT = "acp.permission.wait"
TERMINAL_ID = "acp.terminal.id"
ELICITATION_MODE = "acp.elicitation.mode"
ELICITATION_ACTION = "acp.elicitation.action"
RECONNECT_ATTEMPT = "acp.reconnect.attempt"
RECONNECT_TRANSPORT = "acp.reconnect.transport"

# -- the host (``acp-session serve``): what its clients do ------------------------------------------------------
HOST_CLIENT = "acp.host.client"
HOST_PROFILE = "acp.host.profile"
HOST_REPLAYED = "acp.host.replayed"
HOST_ANSWERED_BY = "acp.host.answered_by"
SPAN_HOST_CONNECTION = "acp host connection"

SPAN_INITIALIZE = "initialize"
SPAN_PERMISSION = "session/request_permission"
SPAN_RECONNECT = "acp reconnect"
