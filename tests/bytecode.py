"""Loaded as the first plugin (``-p tests.bytecode`` in pyproject's addopts), before any other is imported: pytest
keeps the modules it rewrites for assertions on disk (as bytecode) even where ``PYTHONDONTWRITEBYTECODE`` is set.

The anyio plugin (``-p anyio``) makes pytest rewrite the whole ``anyio`` package, and it is imported before any
conftest runs; without this, every pytest process (the controller and each parallel worker) rewrote and compiled
those 120 modules anew on every run. Only pytest's process is affected: the subprocesses the tests start keep the
variable (tests/conftest.py compiles the package's modules for them once instead).
"""

import sys

sys.dont_write_bytecode = False
