# Long robustness runs (excluded from the default test suite). See docs/robustness.md. Each in one process (-n 0):
# one long test gains nothing from the suite's parallel workers, and -s shows its output.
PYTHON ?= .venv/bin/python
FUZZ_EXAMPLES ?= 500000
LOAD_UPDATES ?= 1000000

.PHONY: fuzz fuzz-asyncio fuzz-trio load

# 1 000 000 fuzz cases: 500 000 per backend, both backends in parallel (one per core).
fuzz:
	$(MAKE) -j2 fuzz-asyncio fuzz-trio

fuzz-asyncio fuzz-trio:
	ACP_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PYTHON) -m pytest -q -n 0 -p no:logging tests/robustness/test_fuzz.py tests/rpc/test_fastpath_fuzz.py -k $(@:fuzz-%=%)

# 1 000 000 chunk updates into a 10x slower handler, and the permission storm (1 000 requests, cancelled
# mid-way, with and without withdrawals) 20 times, on both backends.
load:
	ACP_LOAD_UPDATES=$(LOAD_UPDATES) $(PYTHON) -m pytest -q -n 0 -s tests/robustness/test_load.py -k flood
	ACP_CANCEL_RUNS=20 $(PYTHON) -m pytest -q -n 0 tests/robustness/test_cancel_barrier.py

# The real-agent suite (not in CI: the agents download hundreds of MB on first start): installs the agents pinned
# in dev/real_agents/agents.toml into .cache/real-agents, checks each through the public API with a fresh HOME and no
# credentials, and writes docs/real-agents.md; then runs whole turns against the harness's scripted model on
# 127.0.0.1 for every agent with a model wiring (in a loopback-only network namespace where unshare allows) and
# writes their section of docs/real-agents.md. The second step runs even when the first reports a failure.
.PHONY: real-agents
real-agents:
	$(PYTHON) -m dev.real_agents.install
	$(PYTHON) -m dev.real_agents.check --out docs/real-agents.md; status=$$?; \
	$(PYTHON) -m dev.real_agents.turns --out docs/real-agents.md || status=1; exit $$status
