"""The ``acp-session`` command line (``acp-session chat``, ``sessions``, ``resume``, ``conformance``)."""

from acp_session.cli.main import EXIT_CODES, main

__all__ = ["EXIT_CODES", "main"]
