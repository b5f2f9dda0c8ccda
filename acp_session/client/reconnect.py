"""Reconnecting a connection whose transport died: the policy, the events, and the driver that re-dials.

The same ``ClientConnection`` (and each ``Conversation`` on it) stays valid across a reconnect: the driver opens
a new transport with the connection's *dialer* (``spawn``: the same command, environment and cwd; a remote
transport: the same URL, cookie jar and headers), runs ``initialize`` on it, swaps it into the connection's hub
and asks every session that registered a ``SessionRecovery`` (a ``Conversation`` does) to resume itself. Until
then the prompts that were in flight are *orphans*: their answers died with the old transport, and the session's
recovery decides how their turns end (from the agent's replay), never the lost answer.

Liveness: while a turn runs, a connection silent for ``idle_timeout`` seconds (no frame read) is probed. A
transport with a ``probe()`` coroutine (a WebSocket ping, an SSE comment: ``LivenessProbe``) is asked; any other
gets a JSON-RPC request for an extension method no agent implements, whose error answer proves the agent alive as
well as a result would. No answer within ``probe_timeout`` severs the transport, which is then a drop like any
other.

A re-dial the server refuses with a status that will not change by waiting (``FINAL_REDIAL_STATUSES``) ends the
recovery at once: ``ReconnectFailed`` with ``status`` set, after that one attempt.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager, AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import anyio
from anyio.abc import TaskStatus

from .._turn_state import OPEN_PROMPT_STATES
from ..client_errors import CapabilityNotSupported, ReconnectFailed, SessionLost
from ..errors import AcpError, ConnectionClosed, RemoteHttpError, RequestTimeout, ResourceNotFound, RpcError
from ..protocol.negotiate import negotiate
from ..rpc import Connection
from ..transport.base import FrameTransport, Transport
from .opening import open_resumed_session
from .outage import OutageTracker
from .reconnect_policy import Reconnected, ReconnectEvent, ReconnectGaveUp, Reconnecting, ReconnectPolicy

if TYPE_CHECKING:
    from ..session import SessionTrack, TrackedPrompt
    from ..transport.recording import TranscriptTarget
    from ._hub import ConnectionHub
    from .connection import ClientConnection

__all__ = [
    "FINAL_REDIAL_STATUSES",
    "PROBE_METHOD",
    "Dialer",
    "LivenessProbe",
    "ReconnectEvent",
    "ReconnectGaveUp",
    "ReconnectPolicy",
    "Reconnected",
    "RedialByDefault",
    "Reconnecting",
    "Reconnector",
    "SessionRecovery",
]

_log = logging.getLogger("acp_session.client")

Dialer = Callable[[], AbstractAsyncContextManager[Transport | FrameTransport]]
"""Opens a new transport to the same agent each time it is called: an async context manager yielding it (leaving
it closes the transport). ``spawn`` makes one that restarts the agent; a remote transport's reopens its URL."""


class RedialByDefault:
    """A dialer whose connections reconnect unless told not to (``ClientBuilder.reconnect(False)``): a remote
    agent keeps working while the network is gone, so coming back is the useful default."""

    reconnect_by_default = True

    def __init__(self, dial: Dialer) -> None:
        self._dial = dial

    def __call__(self) -> AbstractAsyncContextManager[Transport | FrameTransport]:
        return self._dial()


FINAL_REDIAL_STATUSES = frozenset({401, 403, 407, 410})
"""HTTP statuses that end a reconnect at the first re-dial that gets one. A re-dial sends the same URL, headers
and cookies as the connection that worked: 401 and 407 (credentials missing or no longer accepted, by the server
or a proxy) and 403 (refused: an Origin, address or permission rule) will be answered the same way until someone
changes the credentials or the rule, and retrying them only hammers an auth layer that may lock the account; 410
says the endpoint is gone for good. Other statuses are retried: 404 (an ingress route missing during a deploy),
408, 429, 5xx and the rest can pass, and the attempts and the deadline bound them."""

PROBE_METHOD = "_acp_session/ping"
"""The liveness probe of a transport without its own: any answer, an error included, shows the agent is there."""


def policy_for(choice: ReconnectPolicy | bool | None, dialer: Dialer | None) -> ReconnectPolicy | None:
    """The policy of a connection made through ``dialer``: the one chosen (``ClientBuilder.reconnect``), else the
    default one when the dialer says ``reconnect_by_default`` (remote transports), else None (off)."""
    if isinstance(choice, ReconnectPolicy):
        return choice
    if choice is None and getattr(dialer, "reconnect_by_default", False):
        return ReconnectPolicy()
    return None


def recording(path: TranscriptTarget | None) -> Callable[[Any], Any]:
    """What each transport of a connection is wrapped in, the first and every re-dialed one: the transcript
    recording (``ClientBuilder.record_transcript``), or nothing."""
    if path is None:
        return lambda transport: transport
    from ..transport.recording import RecordingFrames, RecordingTransport

    def wrap(transport: Any) -> Any:
        if isinstance(transport, FrameTransport):  # a message-framed (remote) transport
            return RecordingFrames(transport, path)
        return RecordingTransport(transport, path)

    return wrap


class SessionRecovery(Protocol):
    """What a session's owner (a ``Conversation``) gives the reconnect driver."""

    async def recover(self, connection: ClientConnection) -> None:
        """Resume the session on the connection's new transport; raise ``SessionLost`` if the agent lost it, and
        let ``ConnectionClosed`` out (the attempt failed: it is called again on the next one)."""
        ...

    def reconnect_event(self, event: ReconnectEvent) -> None:
        """Each reconnect event, in order (``chat()`` reports them to the running turns)."""
        ...


@runtime_checkable
class LivenessProbe(Protocol):
    """A transport that can check its peer cheaply (a WebSocket ping, an SSE comment): return when the peer
    answered, raise when it cannot. Used instead of the JSON-RPC probe."""

    async def probe(self) -> None: ...


class Reconnector:
    """One connection's reconnect driver (internal; ``ClientBuilder.connect`` starts it when a policy is on)."""

    def __init__(
        self,
        hub: ConnectionHub,
        policy: ReconnectPolicy,
        dialer: Dialer,
        options: Mapping[str, Any],
        wrap: Callable[[Any], Any] = lambda transport: transport,
    ) -> None:
        self.hub = hub
        self.policy = policy
        self.dialer = dialer
        self.options = dict(options)
        self.wrap = wrap  # the builder's transcript recording, applied to each new transport
        self.recoveries: dict[str, SessionRecovery] = {}
        """Each session's recovery by id (a ``Conversation`` registers itself while it is bound)."""
        self.listeners: list[Callable[[ReconnectEvent], None]] = []
        self.orphans: list[tuple[SessionTrack, TrackedPrompt]] = []
        self.reconnecting = False
        self.reconnects = 0
        """How many times the connection came back."""
        self.failure: ReconnectFailed | None = None
        self.closing = False
        self._severed: set[int] = set()  # ids of connections the liveness check cut: their close is a drop
        self._runners: list[anyio.Event] = []
        self._outages = OutageTracker(policy)
        self.finished = anyio.Event()
        """Set when the connection is closed for good: closed locally, or the policy gave up."""

    # -- what the hub and the sessions ask ----------------------------------------------------------------

    def will_retry(self, rpc: Connection) -> bool:
        """Whether the loss of ``rpc`` will be recovered from (so a prompt's lost answer is not its outcome)."""
        if self.closing or self.failure is not None:
            return False
        return not rpc.closed_locally or id(rpc) in self._severed

    def orphan(self, track: SessionTrack, prompt: TrackedPrompt) -> None:
        """A prompt whose answer died with the transport: settled once its session was recovered."""
        self.orphans.append((track, prompt))

    # -- the driver ----------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Watch the current transport; on a drop, recover; end when it is closed locally or the policy gave up."""
        try:
            await self._run()
        finally:
            self.finished.set()

    async def _run(self) -> None:
        while True:
            rpc = self.hub.rpc
            liveness = anyio.CancelScope()
            if self.policy.idle_timeout is not None:
                self.hub.start_soon(self._watch_liveness, rpc, liveness)
            error = await rpc.wait_closed()
            liveness.cancel()
            if not self.will_retry(rpc):
                return
            if not await self._recover(error):
                return

    async def aclose(self) -> None:
        """The connection's block is being left: no more reconnects; close the current link if it is ours."""
        self.closing = True
        rpc = self.hub.rpc
        if self._runners:
            await rpc.aclose()
            with anyio.move_on_after(10):
                for done in self._runners:
                    await done.wait()

    def _emit(self, event: ReconnectEvent) -> None:
        for recovery in list(self.recoveries.values()):
            _safely(recovery.reconnect_event, event)
        for listener in list(self.listeners):
            _safely(listener, event)

    async def _recover(self, error: BaseException) -> bool:
        policy = self.policy
        outages = self._outages
        outage = outages.dropped(anyio.current_time())
        last: BaseException = error
        attempt = 0  # dials of this recovery (the events count them); the outage counts all of its own
        self.reconnecting = True
        self.hub.pause_calls()  # the application's calls wait for the new transport, back-off included
        try:
            with anyio.move_on_after(max(0.0, outages.remaining(anyio.current_time()))) as deadline:
                while attempt < policy.attempts and not outages.flapping():
                    await anyio.sleep(outages.delay())  # none first; after a re-drop, the outage's back-off
                    attempt += 1
                    self._emit(Reconnecting(attempt, policy.attempts, last))
                    try:
                        with self._attempt_span(outages.dialing()):  # OpenTelemetry, when instrumented
                            await self._attempt()
                    except (AcpError, OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
                        last = exc
                        _log.info("reconnect attempt %d of %d failed: %s", attempt, policy.attempts, exc)
                        if refused_for_good(exc) is not None:
                            break  # the same request gets the same answer: no back-off, no more attempts
                        continue
                    self.reconnects += 1
                    outages.came_back(anyio.current_time())
                    self._emit(Reconnected(attempt))
                    return True
            if outage.drops:
                _log.warning(
                    "the connection dropped again %d times soon after coming back: reconnecting is given up",
                    outage.drops,
                )
            failure = ReconnectFailed(
                outage.dials,
                anyio.current_time() - outage.started,
                last,
                deadline_reached=deadline.cancelled_caught or outages.remaining(anyio.current_time()) <= 0,
                status=refused_for_good(last),
                drops=outage.drops,
            )
            self.failure = failure
            self._settle_orphans(failure, lambda session_id: False)
            self._emit(ReconnectGaveUp(failure))
            return False
        finally:
            self.reconnecting = False
            self.hub.resume_calls()

    def _attempt_span(self, attempt: int) -> AbstractContextManager[object]:
        """The reconnect span of one attempt (current while it runs, so its initialize and resumes are children),
        or nothing when the connection is not instrumented."""
        telemetry = self.hub.telemetry
        if telemetry is None:
            return nullcontext()
        return telemetry.reconnect(attempt, type(self.dialer).__name__)

    async def _attempt(self) -> None:
        self.hub.pause_calls()
        rpc: Connection = await self.hub.start_task(self._serve_link)
        if self.hub.telemetry is not None:
            self.hub.telemetry.attach(rpc)  # before initialize: it carries the trace context too
        try:
            with self.hub.initialize_span():
                protocol = await negotiate(
                    rpc,
                    self.hub.builder,
                    self.hub.builder.versions,
                    timeout=self.policy.initialize_timeout,
                    agent=rpc.transport,
                )
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                await rpc.aclose()
            refusal = _http_refusal(rpc)
            if isinstance(exc, ConnectionClosed) and refusal is not None:
                raise refusal from exc  # the status the server answered, not only the closed stream it caused
            raise
        self.hub.adopt(rpc, protocol)
        self.hub.resume_calls()  # the sessions' resumes go out on the new peer; so may the application's calls
        connection = self.hub.connection
        recovered: set[str] = set()
        for session_id, recovery in list(self.recoveries.items()):
            try:
                await recovery.recover(connection)
            except SessionLost:
                _log.info("session %s was lost while reconnecting", session_id)
            recovered.add(session_id)
        await self._resume_bare_sessions(recovered)
        self._settle_orphans(
            ConnectionClosed("the connection was lost; the session was resumed"), recovered.__contains__
        )

    async def _resume_bare_sessions(self, recovered: set[str]) -> None:
        """Sessions opened here without a recovery (bare ``ActiveSession`` handles): resumed without replay, so
        their listeners see only what comes next; their prompts in flight fail with the drop (nobody can tell
        their outcome). A session the agent lost is marked closed."""
        hub = self.hub
        for session_id, cwd in list(hub.session_cwds.items()):
            track = hub.session_tracks.get(session_id)
            if session_id in recovered or track is None or track.closed or track.parent is not None:
                continue
            try:
                await open_resumed_session(hub, session_id, cwd, None, (), ())
            except (ResourceNotFound, CapabilityNotSupported) as exc:
                _log.info("session %s could not be resumed after reconnecting: %s", session_id, exc)
                track.closed = True

    def _settle_orphans(self, error: AcpError, quietly: Callable[[str], bool]) -> None:
        """Orphaned prompts leave their tracks: quietly for recovered sessions (their turns were settled from the
        replay), with ``error`` through their callbacks otherwise."""
        orphans, self.orphans = self.orphans, []
        for track, prompt in orphans:
            if prompt.status not in OPEN_PROMPT_STATES:
                continue
            if quietly(track.session_id):
                prompt.on_settle = None
            track.settle(prompt, None, error)

    async def _serve_link(self, *, task_status: TaskStatus[Connection]) -> None:
        """One re-dialed transport and its JSON-RPC peer, in a task of their own (their task groups must open and
        close in one task); ends when the peer is closed."""
        done = anyio.Event()
        self._runners.append(done)
        try:
            async with self.dialer() as transport:
                options = dict(self.options)
                name = getattr(transport, "name", None)
                if isinstance(name, str):
                    options["peer_name"] = name
                rpc = Connection(self.wrap(transport), **options)
                async with rpc:
                    task_status.started(rpc)
                    await rpc.wait_closed()
        finally:
            done.set()
            self._runners.remove(done)

    # -- liveness ------------------------------------------------------------------------------------------

    def _turn_running(self) -> bool:
        for track in list(self.hub.session_tracks.values()):
            if track.state in ("running", "requires_action"):
                return True
            if any(p.status in OPEN_PROMPT_STATES for p in track.prompts):
                return True
        return False

    async def _watch_liveness(self, rpc: Connection, scope: anyio.CancelScope) -> None:
        idle = self.policy.idle_timeout
        assert idle is not None
        with scope:
            seen = rpc.frames_read
            while not rpc.closed:
                await anyio.sleep(idle)
                heard, seen = rpc.frames_read != seen, rpc.frames_read
                if rpc.closed or heard or not self._turn_running():
                    continue  # only a connection silent for a whole interval while a turn runs is probed
                if not await self._probe(rpc):
                    _log.warning(
                        "no answer to a liveness probe in %s s: the connection is cut", self.policy.probe_timeout
                    )
                    self._severed.add(id(rpc))
                    await _sever(rpc)
                    return

    async def _probe(self, rpc: Connection) -> bool:
        transport = rpc.transport
        inner = getattr(transport, "inner", transport)  # a recording wraps the transport that can probe
        with anyio.move_on_after(self.policy.probe_timeout):
            if isinstance(inner, LivenessProbe):
                try:
                    await inner.probe()
                except (OSError, AcpError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return False
                return True
            try:
                await rpc.request(PROBE_METHOD, {})
            except RequestTimeout:
                return False
            except ConnectionClosed:
                return True  # closed meanwhile: the drop is handled as such
            except RpcError:
                return True  # an error answer is an answer
            return True
        return False


def refused_for_good(error: BaseException) -> int | None:
    """The status of a re-dial refusal that ends the reconnect (``FINAL_REDIAL_STATUSES``), else None."""
    if isinstance(error, RemoteHttpError) and error.status in FINAL_REDIAL_STATUSES:
        return error.status
    return None


def _http_refusal(rpc: Connection) -> RemoteHttpError | None:
    """The HTTP error that ended a re-dialed remote transport (its ``failure``; a recording wraps it), if any:
    over Streamable HTTP a refused ``initialize`` POST shows only as a closed stream to the rpc layer."""
    transport = rpc.transport
    failure = getattr(getattr(transport, "inner", transport), "failure", None)
    return failure if isinstance(failure, RemoteHttpError) else None


async def _sever(rpc: Connection) -> None:
    """Cut a silent transport so its reader ends as on any drop (closing the transport, not the peer: closing a
    peer entered by the connection's own block would cancel that block)."""
    with anyio.CancelScope(shield=True):
        try:
            await rpc.transport.aclose()
        except Exception:  # it is being thrown away
            _log.debug("closing a silent transport failed", exc_info=True)


def _safely(fn: Callable[[ReconnectEvent], Any], event: ReconnectEvent) -> None:
    try:
        fn(event)
    except Exception:
        _log.exception("a reconnect event handler failed")
