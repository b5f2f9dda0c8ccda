"""The cookie jar of a remote connection: one per connection (or per reconnecting dialer), shared by the HTTP
requests and the WebSocket upgrade, so a load balancer's affinity cookie comes back on every request.

It is the standard library's ``http.cookiejar.CookieJar`` (domain, path, expiry and ``Secure`` rules), which the
HTTP client uses in place: the same object, never a copy, so a new transport opened by the same dialer keeps
the cookies. Bounded, since a server could otherwise set cookies without end and have every request carry them
all (1 240 cookies made a 5 MB ``Cookie`` header): RFC 6265's minimums (section 6.1) are its caps. A cookie over
``MAX_COOKIE_BYTES`` is not kept; past ``MAX_COOKIES_PER_DOMAIN`` for one domain, or ``MAX_COOKIES`` in all, the
cookie set longest ago goes (setting a cookie again makes it the newest).
"""

from __future__ import annotations

import logging
from http.cookiejar import Cookie, CookieJar, DefaultCookiePolicy
from typing import Any

__all__ = [
    "MAX_COOKIES",
    "MAX_COOKIES_PER_DOMAIN",
    "MAX_COOKIE_BYTES",
    "BoundedCookieJar",
    "CookieJar",
    "cookie_names",
    "new_cookie_jar",
]

_log = logging.getLogger("acp_session.transport.remote")

MAX_COOKIE_BYTES = 4096
"""One cookie's name, value, domain and path together, in characters."""
MAX_COOKIES_PER_DOMAIN = 50
"""Cookies kept for one domain."""
MAX_COOKIES = 3000
"""Cookies kept in all."""

_Key = tuple[str, str, str]  # (domain, path, name): the jar's own keys


def _domain(cookie_domain: str) -> str:
    return cookie_domain.lstrip(".").lower()


class BoundedCookieJar(CookieJar):
    """A ``CookieJar`` that keeps at most ``max_per_domain`` cookies per domain and ``max_cookies`` in all, each
    at most ``max_cookie_bytes``: past a count the cookie set longest ago is dropped."""

    def __init__(
        self,
        policy: DefaultCookiePolicy | None = None,
        *,
        max_cookie_bytes: int = MAX_COOKIE_BYTES,
        max_per_domain: int = MAX_COOKIES_PER_DOMAIN,
        max_cookies: int = MAX_COOKIES,
    ) -> None:
        super().__init__(policy)
        self._lock: Any = self._cookies_lock  # type: ignore[attr-defined]  # the jar's own (re-entrant) lock
        self.max_cookie_bytes = max_cookie_bytes
        self.max_per_domain = max_per_domain
        self.max_cookies = max_cookies
        self.dropped = 0
        """Cookies not kept (too large) or dropped to make room."""
        self._order: dict[_Key, None] = {}  # every cookie held, set longest ago first
        self._by_domain: dict[str, dict[_Key, None]] = {}  # the same, per domain

    def set_cookie(self, cookie: Cookie) -> None:
        size = len(cookie.name) + len(cookie.value or "") + len(cookie.domain) + len(cookie.path)
        if size > self.max_cookie_bytes:
            self.dropped += 1
            _log.debug("a %d-character cookie from %s not kept (limit %d)", size, cookie.domain, self.max_cookie_bytes)
            return
        with self._lock:
            super().set_cookie(cookie)
            key = (cookie.domain, cookie.path, cookie.name)
            domain = self._by_domain.setdefault(_domain(cookie.domain), {})
            self._order.pop(key, None)
            domain.pop(key, None)
            self._order[key] = None
            domain[key] = None
            while len(domain) > self.max_per_domain:
                self._evict(next(iter(domain)))
            while len(self._order) > self.max_cookies:
                self._evict(next(iter(self._order)))

    def _evict(self, key: _Key) -> None:
        self.dropped += 1
        self.clear(*key)

    def clear(self, domain: str | None = None, path: str | None = None, name: str | None = None) -> None:
        with self._lock:
            super().clear(domain, path, name)
            if domain is None:
                self._order.clear()
                self._by_domain.clear()
                return
            gone = [
                key
                for key in self._by_domain.get(_domain(domain), ())
                if key[0] == domain and (path is None or key[1] == path) and (name is None or key[2] == name)
            ]
            held = self._by_domain.get(_domain(domain), {})
            for key in gone:
                del self._order[key]
                del held[key]
            if not held:
                self._by_domain.pop(_domain(domain), None)


def new_cookie_jar() -> BoundedCookieJar:
    """An empty bounded jar that takes cookies only for the host that set them (no third-party domains)."""
    return BoundedCookieJar(policy=DefaultCookiePolicy(strict_ns_domain=DefaultCookiePolicy.DomainStrict))


def cookie_names(jar: CookieJar) -> list[str]:
    """The names of the cookies held (never their values, which may be credentials)."""
    return sorted({cookie.name for cookie in jar})
