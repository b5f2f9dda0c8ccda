"""The interop tests' ``node`` fixture (it installs the official TypeScript SDK, whose v1 example agent we run)."""

from tests.interop.conftest import node

__all__ = ["node"]
