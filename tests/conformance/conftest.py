"""The interop tests' ``node`` fixture (node on PATH, the TypeScript SDK installed), for the client-mode run of
the official TypeScript SDK's client."""

from __future__ import annotations

from tests.interop.conftest import node

__all__ = ["node"]
