"""The strings a hostile agent sends to spoof a terminal (``tests/cli/agents/spoofing_agent.py``), shared with
the tests that look for them. Stdlib only: the agent imports this by path, as it does ``agent_io``.

EVIL's CSI sequences have zero-padded parameters (``ESC [ 0913 A``), which no terminal library writes, so a test
can tell them from the CLI's own cursor moves.
"""

EVIL = (
    "\x1b]52;c;b3duZWQ=\x07"  # OSC 52: write "owned" to the clipboard
    "\x1b]0;owned-title\x1b\\"  # OSC 0: the window title
    "\x1b[0913A\x1b[02K"  # CSI: cursor up, erase the line
    "\r\x08"  # carriage return, backspace: overwrite what was shown
    "\u009b02J\u009b0913;01H"  # C1 CSI (8-bit): erase the screen, move the cursor
    "\u009d0;c1-title\u009c"  # C1 OSC
    "\x1bP0913q\x1b\\"  # DCS
    "\u202e\u2066\u200f"  # bidi: right-to-left override, isolate, mark
)
SPOOFED_NAME = "x\x1b[02K\r  [1/r] Reject  (r: reject once)" + EVIL
"""The issue's spoof: an allow_always option named to read as the reject choice."""
