"""Zero cost when off: a whole turn without ``instrument()`` never imports OpenTelemetry, and without the ``otel``
extra the library works as before while ``instrument()`` says what to install (each in a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.telemetry.support import REFERENCE

TURN = f"""
import sys, anyio
from acp_session import ClientBuilder

async def main():
    async with ClientBuilder("plain", "1.0").spawn({REFERENCE!r}) as client:
        conversation = await client.start_conversation(sys.argv[1])
        reply = await conversation.chat_to_completion("/permission")
        assert reply.stop_reason == "end_turn", reply.stop_reason
    loaded = sorted(name for name in sys.modules if name.split(".")[0] == "opentelemetry")
    assert not loaded, loaded
    print("clean")

anyio.run(main)
"""

BLOCK_OTEL = """
import sys
class NoOtel:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "opentelemetry":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, NoOtel())
"""

WITHOUT_EXTRA = """
from acp_session import ClientBuilder
try:
    ClientBuilder("x").instrument()
except ImportError as exc:
    print("refused:", exc)
"""


def run(code: str, *args: str) -> str:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_turn_without_instrumentation_never_imports_opentelemetry(tmp_path: Path) -> None:
    assert run(TURN, str(tmp_path)).strip() == "clean"


def test_without_the_extra_everything_works_and_instrument_names_the_extra(tmp_path: Path) -> None:
    assert run(BLOCK_OTEL + TURN, str(tmp_path)).strip() == "clean"
    out = run(BLOCK_OTEL + WITHOUT_EXTRA)
    assert "refused:" in out and "acp-session[otel]" in out
