"""The cookie jar of a remote connection: one per connection (or per reconnecting dialer), shared by the HTTP
requests and the WebSocket upgrade, so a load balancer's affinity cookie comes back on every request.

It is the standard library's ``http.cookiejar.CookieJar`` (domain, path, expiry and ``Secure`` rules), which the
HTTP client uses in place: the same object, never a copy, so a new transport opened by the same dialer keeps
the cookies.
"""

from __future__ import annotations

from http.cookiejar import CookieJar, DefaultCookiePolicy

__all__ = ["CookieJar", "cookie_names", "new_cookie_jar"]


def new_cookie_jar() -> CookieJar:
    """An empty jar that takes cookies only for the host that set them (no third-party domains)."""
    return CookieJar(policy=DefaultCookiePolicy(strict_ns_domain=DefaultCookiePolicy.DomainStrict))


def cookie_names(jar: CookieJar) -> list[str]:
    """The names of the cookies held (never their values, which may be credentials)."""
    return sorted({cookie.name for cookie in jar})
