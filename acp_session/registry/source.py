"""Where the registry comes from: the bundled snapshot, a per-user cached copy, a file, or a URL.

Without a source (and without ``ACP_SESSION_REGISTRY``) the official registry is used through a cache that is
refreshed at most once a day: a copy younger than a day is used as is; an older one (or none) is fetched
again, with a short deadline over the whole fetch (``RegistryLimits.registry_deadline``), and kept; when that
fails the stale copy is used, else the snapshot bundled with the package. A failed fetch is not retried for an
hour, so working offline costs one timeout an hour.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from pathlib import Path

import msgspec

from .errors import InvalidRegistry, RegistryOffline
from .limits import DEFAULT_REGISTRY_LIMITS, RegistryLimits
from .model import Registry

__all__ = [
    "DEFAULT_REGISTRY_URL",
    "REFRESH_AFTER",
    "REGISTRY_ENV",
    "bundled_registry",
    "cache_dir",
    "fetch_bytes",
    "load_registry",
    "parse_registry",
]

DEFAULT_REGISTRY_URL = "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json"
REGISTRY_ENV = "ACP_SESSION_REGISTRY"
"""A file path or URL to use instead of the official registry (``--registry`` wins over it); ``bundled``
means the snapshot inside the package, offline."""
REFRESH_AFTER = 24 * 3600.0
RETRY_AFTER = 3600.0
FETCH_TIMEOUT = DEFAULT_REGISTRY_LIMITS.registry_timeout
FETCH_DEADLINE = DEFAULT_REGISTRY_LIMITS.registry_deadline
MAX_REGISTRY_SIZE = DEFAULT_REGISTRY_LIMITS.registry_bytes

_DECODER = msgspec.json.Decoder(Registry)


def cache_dir() -> Path:
    """The per-user cache: ``$XDG_CACHE_HOME/acp-session`` (default ``~/.cache/acp-session``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "acp-session"


def parse_registry(data: bytes, origin: str) -> Registry:
    try:
        registry = _DECODER.decode(data)
    except msgspec.DecodeError as exc:
        raise InvalidRegistry(origin, str(exc)) from None
    return msgspec.structs.replace(registry, origin=origin)


def bundled_registry() -> Registry:
    """The snapshot shipped inside the package (``snapshot.json``; its date in ``registry.snapshot.date``)."""
    from importlib import resources

    data = resources.files(__package__).joinpath("snapshot.json").read_bytes()
    registry = parse_registry(data, "bundled snapshot")
    date = registry.snapshot.date if registry.snapshot is not None else "?"
    return msgspec.structs.replace(registry, origin=f"bundled snapshot of {date}")


def fetch_bytes(
    url: str, timeout: float = FETCH_TIMEOUT, limit: int = MAX_REGISTRY_SIZE, deadline: float = FETCH_DEADLINE
) -> bytes:
    """GET ``url`` within ``deadline`` seconds in all (``timeout`` for any one read), at most ``limit`` bytes;
    ``OSError`` (``URLError``, ``TimeoutError`` included) when the network or the server fails."""
    import http.client  # the network's modules load when a registry is fetched, not with every agent command line

    from .fetch import Deadline, TooLarge, read_capped, watched_urlopen

    parts: list[bytes] = []
    with Deadline(deadline) as watch:
        try:
            with watched_urlopen(url, watch, timeout) as response:
                read_capped(response, watch, limit, 1024 * 1024, parts.append)
        except TooLarge:
            raise OSError(f"{url}: more than {limit} bytes") from None
        except (OSError, http.client.HTTPException) as exc:
            if watch.expired:
                raise TimeoutError(f"{url}: not complete within {deadline:g} s") from None
            if isinstance(exc, OSError):
                raise
            raise OSError(f"{url}: {exc or type(exc).__name__}") from None
    return b"".join(parts)


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _is_url(source: str) -> bool:
    return source.startswith(("http://", "https://", "file://"))


def _from_url(url: str, *, refresh: bool | None, offline: bool, limits: RegistryLimits) -> Registry:
    """``url`` through its cached copy (``refresh``: True always fetches, False never, None when a day old)."""
    key = hashlib.sha256(url.encode()).hexdigest()[:16]
    folder = cache_dir() / "registry"
    cached = folder / f"{key}.json"
    attempt = folder / f"{key}.attempt"
    now = time.time()
    age = now - cached.stat().st_mtime if cached.exists() else None
    due = refresh if refresh is not None else (age is None or age >= REFRESH_AFTER)
    problem = "offline"
    may_try = refresh or not attempt.exists() or now - attempt.stat().st_mtime >= RETRY_AFTER
    if due and not offline and may_try:
        try:
            data = fetch_bytes(url, limits.registry_timeout, limits.registry_bytes, limits.registry_deadline)
            registry = parse_registry(data, url)
        except (OSError, InvalidRegistry) as exc:
            _write_atomically(attempt, b"")
            if refresh:
                raise RegistryOffline(url, str(exc)) from None
            problem = str(exc)
        else:
            _write_atomically(cached, data)
            attempt.unlink(missing_ok=True)
            return registry
    if age is None:
        if url == DEFAULT_REGISTRY_URL:
            return bundled_registry()
        raise RegistryOffline(url, problem)
    fetched = time.strftime("%Y-%m-%d %H:%M", time.localtime(now - age))
    return parse_registry(cached.read_bytes(), f"{url} (cached {fetched})")


def load_registry(
    source: str | os.PathLike[str] | None = None,
    *,
    refresh: bool | None = None,
    offline: bool = False,
    limits: RegistryLimits = DEFAULT_REGISTRY_LIMITS,
) -> Registry:
    """The registry from ``source``: ``None`` (then ``$ACP_SESSION_REGISTRY``, then the official URL through the
    daily cache), ``"bundled"``, a URL (cached the same way) or a file path.

    ``refresh=True`` fetches now (``RegistryOffline`` when that fails), ``False`` uses what is cached;
    ``offline=True`` never touches the network; ``limits`` bounds the fetch (``RegistryLimits``)."""
    if source is None:
        source = os.environ.get(REGISTRY_ENV) or DEFAULT_REGISTRY_URL
    text = os.fspath(source)
    if text == "bundled":
        return bundled_registry()
    if _is_url(text):
        return _from_url(text, refresh=refresh, offline=offline, limits=limits)
    path = Path(text).expanduser()
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidRegistry(str(path), exc.strerror or str(exc)) from None
    return parse_registry(data, str(path))
