"""Sans-IO JSON-RPC 2.0 peer state: classify frames, allocate ids, match responses, build replies.

No awaits and no I/O: ``RpcCore.receive_block(frames)`` turns the frames of one read into events in wire
order (a run of typed notifications is one event), ``RpcCore.receive(frame)`` turns one frame into one event,
the ``*_frame`` methods turn outgoing messages into bytes. A frame is the bytes of one JSON message, nothing
more: how messages are delimited on the wire (newlines on stdio) is the transport's business. The anyio
``Connection`` drives it; tests can drive it directly.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Iterable, Iterator
from itertools import groupby, islice
from operator import attrgetter
from typing import Any, Generic, TypeVar

import msgspec
from msgspec import UNSET, Raw

from .._counted_log import CountedLog
from ..errors import InternalError, InvalidRequest, InvalidResponse, ParseError, RpcError
from ..transport.framing import Frame, InvalidUtf8Frame, LineBlock, OversizedFrame, split_block
from .fastpath import PEEK_WINDOW, FastNotifications
from .handlers import Handler
from .messages import (
    CANCEL_REQUEST_METHOD,
    CancelRequestParams,
    ErrorObject,
    ErrorOut,
    IncomingEnvelope,
    NotificationOut,
    RequestId,
    RequestOut,
    ResultOut,
    cancel_params_decoder,
    encoder,
    envelope_decoder,
    error_decoder,
)
from .repair import repair_lone_surrogates

__all__ = [
    "NOT_A_RESPONSE",
    "NotAResponse",
    "BlockEvent",
    "CancelRequested",
    "Event",
    "FrameTooLarge",
    "NotificationReceived",
    "ProtocolViolation",
    "RequestReceived",
    "ResponseReceived",
    "RpcCore",
    "TypedNotifications",
]

_log = logging.getLogger("acp_session.rpc")
S = TypeVar("S")
_V = "2.0"
_JSON_WS = b" \t\r\n"
_SCALARS = (str, int, float, bytes)
_encode = encoder.encode
_decode_envelope = envelope_decoder.decode
_METHOD_KEY = b'"method"'
_PARAMS_OF = attrgetter("params")


# Events are msgspec structs rather than dataclasses: built in C, with no Python ``__init__`` frame (one is
# made for every frame received). ``gc=False``: they hold no cycles and live for one dispatch.


class RequestReceived(msgspec.Struct, gc=False):
    """The peer called ``method``; answer with ``RpcCore.result_frame``/``error_frame`` for ``id``."""

    id: RequestId
    method: str
    params: Raw | None
    lossy: bool = False
    """The frame decoded only after lone surrogate escapes in it were replaced (``repair.py``)."""


class NotificationReceived(msgspec.Struct, gc=False):
    method: str
    params: Raw | None


class CancelRequested(msgspec.Struct, gc=False):
    """The peer sent ``$/cancel_request`` for a request of its own that we have not answered yet."""

    id: RequestId


class ResponseReceived(msgspec.Struct, Generic[S], gc=False):
    """An answer to one of our requests; ``slot`` is what ``start_request`` stored for it."""

    id: RequestId
    slot: S
    result: Raw | None
    error: RpcError | InvalidResponse | None
    reply: bytes | None = None  # set when the response was malformed: the -32600 to send back


class ProtocolViolation(msgspec.Struct, gc=False):
    """The frame broke a rule; ``reply`` (if any) is the error response to send back.

    ``frame`` is the offending frame when the event came from ``receive_block`` (for a log excerpt)."""

    problem: str
    reply: bytes | None = None
    frame: bytes | None = None


class TypedNotifications(msgspec.Struct, gc=False):
    """A maximal run of consecutive notifications of one typed method, each frame decoded in one pass.

    ``messages`` are the decoded frames in wire order, each with its decoded ``.params`` (the list is not
    copied into a list of params: a driver calling a handler per message takes ``.params`` as it goes);
    ``params`` is that list of params. ``handler`` is the ``Handler`` registered for ``method`` (see
    ``RpcCore.set_notification_handlers``). ``end`` is the index in the block just after the run's last
    frame: a driver that stops after delivering ``k`` messages (a handler was registered meanwhile) resumes
    with ``receive_block(frames[end - len(messages) + k:])``, which decodes the rest with the new table.
    """

    method: str
    handler: Handler
    messages: list[Any]
    end: int

    @property
    def params(self) -> list[Any]:
        return list(map(_PARAMS_OF, self.messages))


class FrameTooLarge(msgspec.Struct, gc=False):
    """The transport skipped a frame of ``size`` bytes, over its limit; nothing is answered."""

    size: int


Event = RequestReceived | NotificationReceived | CancelRequested | ResponseReceived[S] | ProtocolViolation
BlockEvent = Event[S] | TypedNotifications | FrameTooLarge


def error_frame_for(id: RequestId | None, error: RpcError) -> bytes:
    """Encode an error response; unencodable ``data`` is dropped rather than failing the reply."""
    obj = ErrorObject(error.code, error.message, error.data)
    try:
        body = encoder.encode(ErrorOut(_V, id, obj))
    except (TypeError, ValueError, msgspec.EncodeError):
        _log.warning("error data for code %s is not JSON-encodable; sent without data", error.code)
        body = encoder.encode(ErrorOut(_V, id, ErrorObject(error.code, error.message)))
    return body


def _params(params: Any) -> Any:
    """JSON-RPC params are structured (object or array) or omitted (None)."""
    if params is None:
        return UNSET
    if isinstance(params, _SCALARS):
        raise TypeError(f"params must encode to a JSON object or array, not {type(params).__name__}")
    return params


TOO_DEEP = "JSON nested too deeply"


def _too_deep() -> ProtocolViolation:
    """Nesting beyond the decoder's depth limit (the interpreter's recursion limit): the text cannot be parsed
    here, so it is treated like malformed JSON (``-32700``, id null) instead of letting ``RecursionError`` out."""
    return ProtocolViolation(TOO_DEEP, error_frame_for(None, ParseError()))


def _batch_reply(items: list[Any]) -> ProtocolViolation:
    """The one place that decides what a received batch gets. The current ACP v2 schema has no JSON-RPC batches
    (older v2 docs had them): nothing in an array runs, and it gets one ``-32600`` with id null, unless it holds
    notifications only, which get no reply, as notifications never do (JSON-RPC 2.0; ACP-BATCH-202)."""
    if items and all(isinstance(i, dict) and isinstance(i.get("method"), str) and "id" not in i for i in items):
        return ProtocolViolation("batch (JSON array) of notifications received")
    return ProtocolViolation("batch (JSON array) received", error_frame_for(None, InvalidRequest()))


class RpcCore(Generic[S]):
    """Bookkeeping for one JSON-RPC connection, both directions.

    Outgoing requests get fresh integer ids (never reused, ACP2-006) and wait in the pending table with
    a caller-chosen ``slot``. Incoming request ids are tracked until answered so a reply is sent exactly
    once and ``$/cancel_request`` for an unknown or answered id is ignored (ACP2-002).
    """

    def __init__(self, log: CountedLog | None = None) -> None:
        self.log = log or CountedLog(_log, "the peer")  # the peer's repeated mistakes (``Connection.peer_log``)
        self._next_id = 1
        self._pending: dict[RequestId, S] = {}
        self._in_flight: set[RequestId] = set()
        self.typed = FastNotifications({})
        """The one-pass decoders of the typed notification methods (``fastpath.py``); replaced, never changed
        in place, by ``set_notification_handlers``, so a driver can tell a change by identity."""

    def set_notification_handlers(self, handlers: dict[str, Handler]) -> None:
        """The notification handlers changed: rebuild the typed table. A block being received decodes the
        frames not yet classified with the new table."""
        self.typed = FastNotifications(handlers)

    # -- outgoing -------------------------------------------------------------------------------------

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    def is_pending(self, id: RequestId) -> bool:
        return id in self._pending

    def start_request(self, method: str, params: Any, slot: S) -> tuple[int, bytes]:
        """Allocate an id, remember ``slot`` under it and return ``(id, frame)``.

        Raises ``TypeError``/``msgspec.EncodeError`` (nothing registered) when ``params`` cannot be encoded.
        """
        id, frame = self.request_frame(method, params)
        self._pending[id] = slot
        return id, frame

    def request_frame(self, method: str, params: Any) -> tuple[int, bytes]:
        """``start_request`` in two steps, for a driver that sends first: allocate an id and encode the
        request; ``expect(id, slot)`` must follow before any frame is received. Raises like ``start_request``.
        """
        id = self._next_id
        pending = self._pending
        while id in pending:  # only possible if ids were taken over from elsewhere; stay safe
            id += 1
        if params is None:
            params = UNSET
        elif isinstance(params, _SCALARS):
            _params(params)  # raises the TypeError
        frame = _encode(RequestOut(_V, id, method, params))
        self._next_id = id + 1
        return id, frame

    def expect(self, id: RequestId, slot: S) -> None:
        """Wait for the answer to request ``id`` (from ``request_frame``) with ``slot``."""
        self._pending[id] = slot

    def notification_frame(self, method: str, params: Any) -> bytes:
        return encoder.encode(NotificationOut(_V, method, _params(params)))

    def cancel_frame(self, id: RequestId) -> bytes | None:
        """``$/cancel_request`` for our request ``id``, or None if it is no longer pending."""
        if id not in self._pending:
            return None
        return self.notification_frame(CANCEL_REQUEST_METHOD, CancelRequestParams(id))

    def forget(self, id: RequestId) -> S | None:
        """Stop waiting for ``id`` (timeout); a late answer is then logged and dropped."""
        return self._pending.pop(id, None)

    def close(self) -> list[S]:
        """The connection ended: hand back every pending slot so the driver can fail it."""
        slots = list(self._pending.values())
        self._pending.clear()
        return slots

    # -- answering incoming requests -------------------------------------------------------------------

    def is_in_flight(self, id: RequestId) -> bool:
        return id in self._in_flight

    def result_frame(self, id: RequestId, result: Any) -> bytes | None:
        """The success response for incoming request ``id``; None if it was already answered.

        A result that cannot be encoded becomes a generic ``-32603`` (the reason is only logged).
        """
        if id not in self._in_flight:
            return None
        try:
            body = encoder.encode(ResultOut(_V, id, result))
        except (TypeError, ValueError, msgspec.EncodeError):
            _log.exception("result for request %r is not JSON-encodable", id)
            return self.error_frame(id, InternalError())
        self._in_flight.discard(id)
        return body

    def error_frame(self, id: RequestId, error: RpcError) -> bytes | None:
        """The error response for incoming request ``id``; None if it was already answered."""
        if id not in self._in_flight:
            return None
        self._in_flight.discard(id)
        return error_frame_for(id, error)

    # -- incoming ---------------------------------------------------------------------------------------

    def receive_block(self, frames: list[Frame]) -> Iterable[BlockEvent[S]]:
        """Classify the frames of one read, lazily and in wire order: one decoder for every incoming frame.

        Frames are classified only as the events are consumed, so what the driver does with an event (answer
        a request, register a handler) is seen by the frames after it, as with ``receive`` frame by frame.
        A frame of a typed method (``self.typed``) starts a run: the frames from it on are decoded with
        ``list.extend(map(decode, frames))``, one C-level loop, each frame on its own, which stops at the first
        frame that does not decode; the decoded messages come out as one ``TypedNotifications`` per maximal
        run of one method, and that frame goes to ``receive``. Every other frame is one ``receive`` event
        (blank frames none); an ``OversizedFrame`` marker is a ``FrameTooLarge``, an ``InvalidUtf8Frame`` the
        ``-32700`` violation. Byte frames must be UTF-8 (the transport's promise): what decodes on the typed
        path is then exactly what ``receive`` would have classified as that notification.
        """
        if len(frames) != 1:
            return self._receive_frames(frames)
        # A read of one frame (a trickle): the same classification, without a generator.
        frame = frames[0]
        if type(frame) is LineBlock:
            return self._receive_frames(frames)
        if type(frame) is not bytes:
            return tuple(self._receive_frames(frames))
        typed = self.typed
        decode = typed.decode
        if decode is not None and frame.find(_METHOD_KEY, 0, PEEK_WINDOW) >= 0:
            try:
                message = decode(frame)
            except Exception:
                pass
            else:
                method, handler = typed.handlers[type(message)]
                return (TypedNotifications(method, handler, [message], 1),)
        event = self.receive(frame)
        if event is None:
            return ()
        if type(event) is ProtocolViolation:
            event.frame = frame
        return (event,)

    @staticmethod
    def _decode_block(typed: FastNotifications, block: LineBlock) -> tuple[list[Any], bool] | None:
        """Every line of ``block`` decoded as a typed notification in one msgspec call, with whether they are all
        of one method (``FastNotifications.decode_arrays``, tried in turn), or None.

        The lines are decoded as one JSON array, each newline turned into a comma: a blank line (``,,``), a line
        of two messages side by side, a message over two lines at a place where JSON takes no comma (after a
        key, a comma, an opening bracket) all fail it, and a count equal to the block's lines rules out the
        rest but one pair. Only a block holding both a line of two messages joined by a comma and a message
        broken over two lines where its own comma is missing, in equal number, passes, and each of its
        messages is still a whole, valid notification. Anything else takes the exact path, line by line.
        """
        decode_arrays = typed.decode_arrays
        if not decode_arrays:
            return None
        array = bytearray(b"[")
        array += block.data
        array[-1] = 93  # the last newline becomes the closing "]"
        array = array.replace(b"\n", b",")
        for decode_array, uniform in decode_arrays:
            try:
                messages = decode_array(array)
            except msgspec.ValidationError:  # another method's lines, or no typed notification at all
                continue
            except Exception:  # not JSON as a whole: no decoder can take it
                return None
            return (messages, uniform) if len(messages) == block.count else None
        return None

    def _typed_runs(
        self, typed: FastNotifications, messages: list[Any], start: int, uniform: bool
    ) -> Generator[TypedNotifications, None, int]:
        """Decoded typed notifications as ``TypedNotifications``, one per run of one method (``start``: the line
        place of the first, so each run's ``end`` counts lines; ``uniform``: all are of one method). Returns how
        many were yielded: fewer than all when a handler was registered meanwhile (the rest is decoded again
        with the new table)."""
        handlers = typed.handlers
        if uniform:  # one method (the usual case): the messages are one run
            method, handler = handlers[type(messages[0])]
            yield TypedNotifications(method, handler, messages, start + len(messages))
            return len(messages)
        done = 0
        for frame_type, run in groupby(messages, type):
            if self.typed is not typed:
                break
            method, handler = handlers[frame_type]
            part = list(run)
            done += len(part)
            yield TypedNotifications(method, handler, part, start + done)
        return done

    def _receive_frames(self, frames: list[Frame]) -> Iterator[BlockEvent[S]]:
        receive = self.receive
        index = 0
        count = len(frames)
        # Events' ``end`` counts lines: a LineBlock's lines are ``count`` places (``expand_blocks``). ``offset``
        # is how many more places the frames before ``index`` take than their number.
        offset = 0
        retry = True  # False: frames[index] already failed the typed decode with the current table
        while index < count:
            frame = frames[index]
            if type(frame) is LineBlock:
                typed = self.typed
                decoded = self._decode_block(typed, frame)
                if decoded is None:  # not every line a typed notification, or not one per line: the exact path
                    frames = [*frames[:index], *split_block(frame), *frames[index + 1 :]]
                    count = len(frames)
                    retry = True
                    continue
                block_messages, uniform = decoded
                done = yield from self._typed_runs(typed, block_messages, index + offset, uniform)
                if done == frame.count:
                    index += 1
                    offset += frame.count - 1
                else:  # a handler was registered meanwhile: the block's other lines are decoded again, one by one
                    frames = [*frames[:index], *split_block(frame)[done:], *frames[index + 1 :]]
                    count = len(frames)
                    offset += done
                    retry = True
                continue
            if type(frame) is bytes:
                typed = self.typed
                decode = typed.decode
                if decode is not None and retry and frame.find(_METHOD_KEY, 0, PEEK_WINDOW) >= 0:
                    messages: list[Any] = []
                    # extend keeps the messages decoded before a frame that fails (try: free in 3.11, unlike suppress)
                    try:  # noqa: SIM105
                        messages.extend(map(decode, islice(frames, index, None) if index else frames))  # type: ignore[arg-type]
                    except Exception:
                        pass
                    if messages:
                        index += yield from self._typed_runs(typed, messages, index + offset, typed.uniform)
                        # The frame that stopped the decode goes to receive, unless the table changed.
                        retry = self.typed is not typed
                        continue
                retry = True
                index += 1
                event = receive(frame)
                if event is not None:
                    if type(event) is ProtocolViolation:
                        event.frame = frame
                    yield event
            else:
                retry = True
                index += 1
                if type(frame) is OversizedFrame:
                    yield FrameTooLarge(frame.size)
                else:
                    assert type(frame) is InvalidUtf8Frame
                    data = frame.data
                    event = receive(data)  # answered as any text that is not UTF-8
                    if event is not None:
                        if type(event) is ProtocolViolation:
                            event.frame = data
                        yield event

    def receive(self, frame: bytes) -> Event[S] | None:
        """Classify one frame. None means: nothing to do (a blank frame, ignored)."""
        if not frame.isascii():
            try:
                frame.decode("utf-8")
            except UnicodeDecodeError:
                return ProtocolViolation("invalid UTF-8", error_frame_for(None, ParseError()))
        try:
            env = envelope_decoder.decode(frame)
        except msgspec.ValidationError:
            return self._invalid_shape(frame)
        except RecursionError:
            return _too_deep()
        except msgspec.DecodeError:
            if not frame.strip(_JSON_WS):
                return None
            fixed = repair_lone_surrogates(frame)
            if fixed is not None:  # decoded again once: what is left has no lone escape to repair
                event = self.receive(fixed)
                if type(event) is RequestReceived:
                    event.lossy = True
                return event
            return ProtocolViolation("malformed JSON", error_frame_for(None, ParseError()))

        method = env.method
        if method is not UNSET:
            id = env.id
            params = env.params
            if env.jsonrpc != _V or env.result is not UNSET or env.error is not UNSET:
                return self._bad_request(id, "not a JSON-RPC 2.0 request")
            if params is not UNSET and memoryview(params)[0] not in b"{[":
                return self._bad_request(id, "params must be an object or an array")
            if id is UNSET:
                if method == CANCEL_REQUEST_METHOD:
                    return self._cancel_received(params)
                return NotificationReceived(method, None if params is UNSET else params)
            if type(id) is int or type(id) is str:
                if id in self._in_flight:
                    return ProtocolViolation(
                        f"request id {id!r} reused while still in flight",
                        error_frame_for(None, InvalidRequest()),
                    )
                self._in_flight.add(id)
                return RequestReceived(id, method, None if params is UNSET else params)
            return ProtocolViolation("request id must be a string or an integer", self._invalid_null())
        return self._response(env)

    def receive_response(self, frame: bytes) -> Event[S] | NotAResponse | None:
        """``receive`` for a frame that is a response; anything else is left untouched (``NOT_A_RESPONSE``).

        Lets a transport's readiness callback settle a waiting request without waking the reader task.
        ``frame`` may carry whitespace around the message (a line's newline).
        """
        if not frame.isascii():
            return NOT_A_RESPONSE
        try:
            env = _decode_envelope(frame)
        except (msgspec.DecodeError, RecursionError):
            return NOT_A_RESPONSE
        if env.method is not UNSET:
            return NOT_A_RESPONSE
        id = env.id
        result = env.result
        if type(id) is int and result is not UNSET and env.error is UNSET and env.jsonrpc == _V:
            # The usual answer, checked inline: this runs once per round trip.
            slot = self._pending.pop(id, _MISSING)
            if slot is not _MISSING:
                return ResponseReceived(id, slot, result, None)
        return self._response(env)

    def _cancel_received(self, params: Raw | msgspec.UnsetType) -> CancelRequested | None:
        if params is UNSET:
            return None
        try:
            target = cancel_params_decoder.decode(params).requestId
        except (msgspec.DecodeError, RecursionError):
            self.log.warning("malformed cancel requests", "ignoring %s with malformed params", CANCEL_REQUEST_METHOD)
            return None
        if target not in self._in_flight:
            what = "ignoring %s for unknown or answered id %r"
            self.log.debug("cancel requests for unknown or answered ids", what, CANCEL_REQUEST_METHOD, target)
            return None
        return CancelRequested(target)

    def _response(self, env: IncomingEnvelope) -> ResponseReceived[S] | ProtocolViolation | None:
        id = env.id
        raw_error = env.error
        has_result = env.result is not UNSET
        has_error = raw_error is not UNSET
        if not (type(id) is int or type(id) is str):
            if id is None and raw_error is not UNSET and not has_result and env.jsonrpc == _V:
                error_text = bytes(memoryview(raw_error)[:500])
                self.log.warning("errors with id null", "peer reported an error with id null: %s", error_text)
                return None
            return ProtocolViolation("not a request, notification or response", self._invalid_null())
        if env.jsonrpc != _V or has_result == has_error:
            return self._bad_response(id, "malformed response")
        error: RpcError | None = None
        if raw_error is not UNSET:
            try:
                obj = error_decoder.decode(raw_error)
            except (msgspec.DecodeError, RecursionError):
                return self._bad_response(id, "malformed error object")
            error = RpcError.from_error(obj.code, obj.message, obj.data)
        slot = self._pending.pop(id, _MISSING)
        if slot is _MISSING:
            self.log.warning("responses to unknown request ids", "dropping response for unknown request id %r", id)
            return None
        result = env.result
        return ResponseReceived(id, slot, None if result is UNSET else result, error)

    def _bad_response(self, id: RequestId, problem: str) -> ResponseReceived[S] | ProtocolViolation:
        reply = self._invalid_null()
        slot = self._pending.pop(id, _MISSING)
        if slot is _MISSING:
            return ProtocolViolation(problem, reply)
        # The answer to a pending request is unusable: fail its waiter instead of letting it hang.
        return ResponseReceived(id, slot, None, InvalidResponse(f"{problem} for request {id!r}"), reply)

    def _bad_request(self, id: Any, problem: str) -> ProtocolViolation:
        # Echo the id when it is a valid one we are not already answering; otherwise null.
        if (type(id) is int or type(id) is str) and id not in self._in_flight:
            return ProtocolViolation(problem, error_frame_for(id, InvalidRequest()))
        return ProtocolViolation(problem, self._invalid_null())

    @staticmethod
    def _invalid_null() -> bytes:
        return error_frame_for(None, InvalidRequest())

    def _invalid_shape(self, frame: bytes) -> ProtocolViolation | None:
        """The frame did not fit the envelope: tell malformed JSON, batches and bad shapes apart."""
        try:
            value = msgspec.json.decode(frame)
        except RecursionError:
            return _too_deep()
        except msgspec.DecodeError:
            fixed = repair_lone_surrogates(frame)  # a lone surrogate escape is no parse error (repair.py)
            if fixed is None:
                return ProtocolViolation("malformed JSON", error_frame_for(None, ParseError()))
            return self._invalid_shape(fixed)
        if isinstance(value, list):
            return _batch_reply(value)
        if isinstance(value, dict) and isinstance(value.get("method"), str):
            return self._bad_request(value.get("id"), "invalid request fields")
        return ProtocolViolation("not a request, notification or response", self._invalid_null())


_MISSING: Any = object()


class NotAResponse:
    """The type of ``NOT_A_RESPONSE``: ``receive_response`` left the frame for ``receive``."""


NOT_A_RESPONSE = NotAResponse()
