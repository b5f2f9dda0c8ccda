"""The host (``acp-session serve``): one agent process whose sessions belong to the host, served over the remote
profiles (Streamable HTTP and WebSocket) to any number of clients, who may come and go (``docs/serve.md``).

``Host`` runs in the application's own task group (``await tg.start(host.run)`` gives the URL) or in a block of
its own (``open_host``); ``HostOptions`` says what it runs and allows; ``HostEvent`` is what it reports. The
bookkeeping is sans I/O (``core``: the update log, the permission requests and who answered them).
"""

from .core import HostSession, PermissionAsk, UpdateLog
from .events import EventKind, HostEvent
from .host import Host, open_host
from .options import DEFAULT_PERMISSION_TIMEOUT, HostOptions

__all__ = [
    "DEFAULT_PERMISSION_TIMEOUT",
    "EventKind",
    "Host",
    "HostEvent",
    "HostOptions",
    "HostSession",
    "PermissionAsk",
    "UpdateLog",
    "open_host",
]
