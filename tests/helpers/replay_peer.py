"""Write the raw lines given as argv[1] (a JSON list of strings) to stdout, then log every received
line to stderr as "GOT <line>" until stdin ends. Used to check how a client answers bad frames."""

import json
import sys

for line in json.loads(sys.argv[1]):
    sys.stdout.buffer.write(line.encode("utf-8", "surrogateescape") + b"\n")
sys.stdout.buffer.flush()
for raw in sys.stdin.buffer:
    sys.stderr.write("GOT " + raw.decode("utf-8", "replace"))
    sys.stderr.flush()
