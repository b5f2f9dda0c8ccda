"""``acp-conformance --url``: the agent checks and the transport rules against real remote servers.

The servers: our reference agent's ``--listen`` (hypercorn) and the official TypeScript SDK 2.4.0 ``AcpServer``
(tests/interop/ts_server.mjs), over Streamable HTTP and WebSocket; ``--listen --broken MODE``, a server that
breaks one transport rule, which must fail exactly the rows of that rule; and ``--listen --tls-cert`` with a
throwaway trustme CA, over ``https://`` and ``wss://``, which the runner trusts only when told (``--ca-file``,
``$SSL_CERT_FILE``) and otherwise reports as not checked, saying why.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from acp_conformance.runner.checks_remote import REMOTE_CHECKS, remote_checks_for
from acp_conformance.runner.remote_run import REMOTE_ONLY_OVER_STDIO
from acp_conformance.runner.report import table
from acp_conformance.runner.run import RunOptions, run
from acp_conformance.runner.tiers import Tier, classify
from acp_session.transport.remote import RemoteDialer
from tests.remote.conftest import TsServer, ts_server
from tests.remote_server.conftest import Server, Servers, start_server, tls_files

from .packing import first_fit
from .test_conformance import REFERENCE_NOT_APPLICABLE

__all__ = ["start_server", "ts_server"]  # the fixtures, shared with tests/remote

AGENT = [sys.executable, "-m", "acp_conformance.agent"]
CONFORMANCE = [sys.executable, "-m", "acp_conformance.runner"]
ROOT = Path(__file__).resolve().parents[2]

# --broken MODE of our --listen server -> (profile, the transport rows it must fail, the rows it must warn on).
BROKEN: dict[str, tuple[str, set[str], set[str]]] = {
    "wrong-stream": ("http", {"http-session-stream"}, set()),
    "drop-cookies": ("http", {"http-cookies"}, set()),
    "lax-media-types": ("http", {"http-not-acceptable", "http-unsupported-media"}, set()),
    "no-session-check": ("http", {"http-session-header"}, set()),
    "keep-dropped": ("http", set(), {"http-stream-dropped"}),
    "binary-frames": ("websocket", {"ws-text-frames"}, set()),
    "close-socket": ("websocket", {"ws-session-close"}, set()),
}


def _listen(*extra: str) -> tuple[subprocess.Popen[bytes], str]:
    process = subprocess.Popen([*AGENT, "--listen", "127.0.0.1:0", *extra], stdout=subprocess.PIPE)
    assert process.stdout is not None
    url = process.stdout.readline().decode().strip()
    if not url.startswith("http://127.0.0.1:"):
        process.kill()
        pytest.fail(f"--listen did not print its URL: {url!r}")
    return process, url


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)
    if process.stdout is not None:
        process.stdout.close()


@pytest.fixture(scope="module")
def listen_url() -> Iterator[str]:
    """One plain ``--listen`` server for the module's in-process runs (each opens sessions of its own)."""
    process, url = _listen()
    try:
        yield url
    finally:
        _stop(process)


def _as_ws(url: str) -> str:
    return "ws" + url.removeprefix("http")


def _conformance(url: str, *args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    done = _conformance_run(url, *args, env=env)
    return done.returncode, _report(done)


def _conformance_run(url: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CONFORMANCE, "--url", url, "--json", "--timeout", "15", *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env=env,
    )


def _report(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    try:
        report: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        pytest.fail(f"no JSON report (exit {done.returncode}): {done.stdout[-2000:]} {done.stderr[-2000:]}")
    return report


def _statuses(report: dict[str, Any], ids: set[str]) -> dict[str, str]:
    """Each row's verdict status, with WARN for a PASS that carries a warning (a SHOULD not followed)."""
    return {
        c["id"]: "WARN" if c["status"] == "PASS" and c["warnings"] else c["status"]
        for c in report["checks"]
        if c["id"] in ids
    }


def _transport_args(profile: str) -> list[str]:
    return [arg for c in remote_checks_for(profile) for arg in ("--check", c.id)]


def test_every_transport_check_has_an_id_a_tier_and_a_doc_row() -> None:
    docs = (ROOT / "docs" / "conformance.md").read_text()
    for c in REMOTE_CHECKS:
        assert c.rule.startswith("ACP-HTTP-" if c.profile == "http" else "ACP-WS-"), c
        assert classify(2, c.id).tier is c.tier and classify(1, c.id).tier is c.tier
        assert f"| `{c.id}` | {c.tier.value} | {c.rule} |" in docs, c.id
    assert len({c.rule for c in REMOTE_CHECKS}) == len(REMOTE_CHECKS)


@pytest.mark.anyio
@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_the_reference_agent_listening_passes_every_check(listen_url: str, scheme: str) -> None:
    """In process, on both backends: the agent checks through our remote client, then the transport rows."""
    url = listen_url if scheme == "http" else _as_ws(listen_url)
    report = await run(RunOptions([url], dialer=RemoteDialer(url), wait=15.0, jobs=2))
    assert report.problem is None and report.version == 2
    failed = {r.id: r.message for r in report.results if r.status in ("fail", "warn")}
    assert failed == {}
    profile = "http" if scheme == "http" else "websocket"
    transport = {r.id: r.status for r in report.results if r.area == "transport"}
    assert set(transport) == {c.id for c in remote_checks_for(profile)}
    assert all(status == "pass" for status in transport.values()), transport
    assert not any(r.id in REMOTE_ONLY_OVER_STDIO for r in report.results)  # the pipe's rules: not over HTTP


@pytest.mark.anyio
async def test_the_text_report_of_a_url_run_counts_no_agent_processes(listen_url: str) -> None:
    """The agent is a server somewhere: the runner opened connections to it, it started no processes."""
    report = await run(RunOptions([listen_url], dialer=RemoteDialer(listen_url), wait=15.0, only=["initialize"]))
    text = table(report)
    assert report.problem is None and "process" not in text
    assert re.search(r"^1 passed \(0 with warnings\), 0 failed, 0 skipped; \d+\.\d s$", text, re.MULTILINE), text


@pytest.mark.parametrize("scheme", ["http", "ws"])
def test_the_typescript_sdk_server_differs_only_where_recorded(ts_server: TsServer, scheme: str) -> None:
    url = ts_server.url if scheme == "http" else ts_server.ws_url
    profile = "http" if scheme == "http" else "websocket"
    token = "Bearer conformance-s3cret"
    _, report = _conformance(url, "--header", f"Authorization: {token}", *_transport_args(profile))
    statuses = _statuses(report, {c.id for c in remote_checks_for(profile)})
    requests = ts_server.requests()  # --header goes on every request, the probes' and the agent checks' alike
    assert requests and all(r["authorization"] == token for r in requests), requests[:3]
    assert "s3cret" not in json.dumps(report)
    # Recorded differences: TS 2.4.0 keeps a connection whose event stream was dropped (ADVISORY, a warning),
    # and speaks HTTP/1.1 only where the RFD's profile requires HTTP/2 (ADVISORY here, a warning).
    expected = {c.id: "PASS" for c in remote_checks_for(profile)}
    if profile == "http":
        expected["http-stream-dropped"] = "WARN"
        expected["http2"] = "WARN"
    assert statuses == expected, statuses
    batch = next(c for c in report["checks"] if c["id"] == "http-batch") if profile == "http" else None
    assert batch is None or "HTTP 400" in batch["message"]  # 400 with -32600, as ours; the RFD's text says 501


def test_the_typescript_sdk_server_runs_the_agent_checks_over_http(ts_server: TsServer) -> None:
    """The scripted TS agent's own gap (images taken without the capability) fails an agent row; its
    session/resume (one shared app replaying the session, tests/interop/ts_server.mjs) passes; every MANDATORY
    row passes, so the transport carries the checks."""
    _, report = _conformance(ts_server.url)
    assert report["protocolVersion"] == 2 and report["problem"] is None
    mandatory = [c for c in report["checks"] if c["tier"] == Tier.MANDATORY.value]
    # Every MANDATORY row passes, or has nothing to observe (no auth methods: the auth-method checks).
    assert mandatory and all(c["status"] in ("PASS", "SKIPPED") for c in mandatory), mandatory
    assert [c["id"] for c in mandatory if c["status"] == "SKIPPED"] == ["auth-method-types", "terminal-auth-methods"]
    assert _statuses(report, {"resume", "unsupported-content"}) == {"resume": "PASS", "unsupported-content": "FAIL"}


def _broken_groups() -> list[list[str]]:
    """The broken modes packed into servers (``--broken`` is repeatable; as tests/conformance/test_v1_mutants.py
    packs the agent's modes): a mode joins the first group of its profile whose modes fail or warn on none of its
    rows and that exits as it does (failing, or a partial verdict with warnings alone), so the group's server
    must fail and warn on exactly the union of their rows."""

    def joins(group: list[str], mode: str) -> bool:
        profile, failing, warning = BROKEN[mode]
        rows = set().union(*(BROKEN[other][1] | BROKEN[other][2] for other in group))
        return (
            BROKEN[group[0]][0] == profile
            and not rows & (failing | warning)
            and bool(BROKEN[group[0]][1]) == bool(failing)
        )

    return first_fit(sorted(BROKEN), joins)


BROKEN_GROUPS = _broken_groups()


@pytest.fixture(scope="module")
def broken_runs() -> dict[str, tuple[list[str], int, dict[str, Any]]]:
    """mode -> (its group, the run's exit code, its report); each group's server and run started once, when the
    first of its modes is tested."""
    return {}


@pytest.mark.parametrize("mode", sorted(BROKEN))
def test_a_broken_server_fails_exactly_its_rows(
    mode: str, broken_runs: dict[str, tuple[list[str], int, dict[str, Any]]]
) -> None:
    profile, failing, warning = BROKEN[mode]
    if mode not in broken_runs:
        group = next(g for g in BROKEN_GROUPS if mode in g)
        process, url = _listen(*(arg for other in group for arg in ("--broken", other)))
        try:
            code, report = _conformance(url if profile == "http" else _as_ws(url), *_transport_args(profile))
        finally:
            _stop(process)
        broken_runs.update(dict.fromkeys(group, (group, code, report)))
    group, code, report = broken_runs[mode]
    all_failing = set().union(*(BROKEN[other][1] for other in group))
    all_warning = set().union(*(BROKEN[other][2] for other in group))
    statuses = _statuses(report, {c.id for c in remote_checks_for(profile)})
    assert {i for i, s in statuses.items() if s == "FAIL"} == all_failing, (group, statuses)
    assert {i for i, s in statuses.items() if s == "WARN"} == all_warning, (group, statuses)
    assert {s for i, s in statuses.items() if i not in all_failing | all_warning} == {"PASS"}, statuses
    assert {statuses[i] for i in failing} <= {"FAIL"} and {statuses[i] for i in warning} <= {"WARN"}
    assert code == (1 if failing else 4)  # only the transport rows ran: a partial verdict unless one fails


def test_a_server_that_requires_its_cookie_is_served_because_the_runner_returns_it() -> None:
    process, url = _listen("--require-cookie")
    try:
        code, report = _conformance(
            url, *_transport_args("http"), "--check", "session-new", "--check", "prompt-accepted"
        )
    finally:
        _stop(process)
    statuses = _statuses(report, {c.id for c in remote_checks_for("http")} | {"session-new", "prompt-accepted"})
    assert set(statuses.values()) == {"PASS"} and code == 4, statuses  # a subset: partial


def test_url_usage_errors_are_clear() -> None:
    both = subprocess.run([*CONFORMANCE, "--url", "http://x/acp", "--agent", "a"], capture_output=True, text=True)
    assert both.returncode == 2 and "not allowed with" in both.stderr
    bad = subprocess.run([*CONFORMANCE, "--url", "ftp://x/acp"], capture_output=True, text=True)
    assert bad.returncode == 2 and "http(s):// or ws(s)://" in bad.stderr and "Traceback" not in bad.stderr
    header = subprocess.run([*CONFORMANCE, "--agent", "a", "--header", "X: y"], capture_output=True, text=True)
    assert header.returncode == 2 and "--header, --insecure and --ca-file go with --url" in header.stderr
    ca = subprocess.run([*CONFORMANCE, "--agent", "a", "--ca-file", "ca.pem"], capture_output=True, text=True)
    assert ca.returncode == 2 and "--header, --insecure and --ca-file go with --url" in ca.stderr
    both = subprocess.run(
        [*CONFORMANCE, "--url", "https://x/acp", "--ca-file", "ca.pem", "--insecure"], capture_output=True, text=True
    )
    assert both.returncode == 2 and "--ca-file and --insecure do not go together" in both.stderr
    missing = subprocess.run(
        [*CONFORMANCE, "--url", "https://x/acp", "--ca-file", "/no/such/ca.pem"], capture_output=True, text=True
    )
    assert missing.returncode == 2 and "the CA file '/no/such/ca.pem' does not exist" in missing.stderr
    assert "Traceback" not in missing.stderr


# -- TLS: https:// and wss:// ------------------------------------------------------------------------------


@dataclass
class TlsServer:
    """``--listen`` with a certificate for 127.0.0.1 from a throwaway CA; ``ca`` is the CA's PEM file."""

    server: Server
    ca: str

    def url(self, scheme: str) -> str:
        assert self.server.url.startswith("https://127.0.0.1:"), self.server.url
        return scheme + self.server.url.removeprefix("https")


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], TlsServer]]:
    """The module's TLS servers, one per backend, started when first asked for: every TLS test opens sessions of
    its own, so they share the server (and its throwaway CA) rather than start one each."""
    directory = tmp_path_factory.mktemp("tls")
    servers = Servers(directory)
    started: dict[str, TlsServer] = {}

    def start(backend: str = "asyncio") -> TlsServer:
        if backend not in started:
            (directory / backend).mkdir()
            ca, cert, key = tls_files(directory / backend)
            started[backend] = TlsServer(servers.start("--tls-cert", cert, "--tls-key", key, backend=backend), ca)
        return started[backend]

    yield start
    servers.stop()


def _env(**changes: str | None) -> dict[str, str]:
    """This environment without ``SSL_CERT_FILE`` (a machine's own bundle would decide nothing here), plus
    ``changes``."""
    env = {k: v for k, v in os.environ.items() if k != "SSL_CERT_FILE"}
    env.update({k: v for k, v in changes.items() if v is not None})
    return env


def _profile(scheme: str) -> str:
    return "http" if scheme == "https" else "websocket"


def _every_row_passes(report: dict[str, Any], scheme: str) -> None:
    assert report["problem"] is None and report["protocolVersion"] == 2
    statuses = _statuses(report, {c["id"] for c in report["checks"]})
    transport = {c.id for c in remote_checks_for(_profile(scheme))}
    assert transport <= set(statuses), sorted(transport - set(statuses))
    assert {statuses[i] for i in transport} == {"PASS"}, {i: statuses[i] for i in transport}
    others = {i: s for i, s in statuses.items() if s != "PASS"}
    # The reference agent has no login methods, no image or audio prompts, no config_option_update.
    assert others == dict.fromkeys(REFERENCE_NOT_APPLICABLE, "SKIPPED"), others


@pytest.mark.parametrize("scheme", ["https", "wss"])
def test_over_tls_every_check_passes_with_the_ca_file(tls_server: Callable[[str], TlsServer], scheme: str) -> None:
    """The whole run, agent checks and transport rows, through TLS that is verified against the test CA.

    The server runs on trio here: ``--ca-file`` is the runner's (a subprocess on its own loop), and the server's
    TLS on asyncio is run whole by the test below (``--insecure`` and ``$SSL_CERT_FILE``, both schemes) and by
    ``test_over_tls_in_process``, so an asyncio server here would repeat a whole run per scheme for nothing."""
    tls = tls_server("trio")
    code, report = _conformance(tls.url(scheme), "--ca-file", tls.ca, env=_env())
    _every_row_passes(report, scheme)
    assert code == 0
    if scheme == "https":
        http2 = next(c for c in report["checks"] if c["id"] == "http2")
        assert http2["message"] == "served over HTTP/2 (TLS ALPN)"  # hypercorn offers h2 by ALPN
    rerun = next(c["rerun"] for c in report["checks"] if c["id"] == "session-new")
    assert f"--ca-file {tls.ca}" in rerun  # the rerun command trusts the CA too


@pytest.mark.parametrize("scheme", ["https", "wss"])
def test_over_tls_an_untrusted_certificate_is_not_checked_and_says_so(
    tls_server: Callable[[str], TlsServer], scheme: str
) -> None:
    """Without the CA: exit 3 (the agent could not be checked, not a non-conformant one), every row not run, and
    the reason in words with what to do; ``--insecure`` and ``$SSL_CERT_FILE`` each make the same run pass."""
    tls = tls_server("asyncio")
    url = tls.url(scheme)
    done = _conformance_run(url, env=_env())
    report = _report(done)
    assert done.returncode == 3, report["problem"]
    problem = report["problem"]
    assert problem.startswith("could not connect to the agent: ") and "CERTIFICATE_VERIFY_FAILED" in problem
    assert "--ca-file PATH trusts its CA, --insecure skips the check" in problem
    assert "Traceback" not in done.stdout + done.stderr
    assert "closed its stdin" not in json.dumps(report)  # not the words of a process that exited
    transport = {c.id for c in remote_checks_for(_profile(scheme))}
    assert {c["id"] for c in report["checks"]} >= transport
    assert {c["status"] for c in report["checks"]} == {"NOT_TESTED"}  # each row would only repeat the reason
    table = subprocess.run(  # the text report leads with it
        [*CONFORMANCE, "--url", url, "--check", "session-new"], capture_output=True, text=True, env=_env(), cwd=ROOT
    )
    assert table.returncode == 3 and "NOT CHECKED: could not connect to the agent: " in table.stdout
    assert "Traceback" not in table.stderr

    code, insecure = _conformance(url, "--insecure", env=_env())
    _every_row_passes(insecure, scheme)
    assert code == 0
    code, from_env = _conformance(url, env=_env(SSL_CERT_FILE=tls.ca))
    _every_row_passes(from_env, scheme)
    assert code == 0


@pytest.mark.anyio
@pytest.mark.parametrize("scheme", ["https", "wss"])
async def test_over_tls_in_process(tls_server: Callable[[str], TlsServer], scheme: str) -> None:
    """The same run in process, on both backends: a dialer with ``ca_file`` (HTTP/1.1, its "auto", for the agent
    checks; the ``http2`` row asks for HTTP/2 by ALPN itself)."""
    tls = tls_server("asyncio")
    url = tls.url(scheme)
    report = await run(RunOptions([url], dialer=RemoteDialer(url, ca_file=tls.ca), wait=15.0, jobs=2))
    assert report.problem is None and report.version == 2
    assert {r.id: r.message for r in report.results if r.status in ("fail", "warn")} == {}
    transport = {r.id: r.status for r in report.results if r.area == "transport"}
    assert set(transport) == {c.id for c in remote_checks_for(_profile(scheme))}
    assert set(transport.values()) == {"pass"}, transport
    untrusted = await run(RunOptions([url], dialer=RemoteDialer(url), wait=15.0, only=["initialize"]))
    assert untrusted.problem is not None and "CERTIFICATE_VERIFY_FAILED" in untrusted.problem
    assert {r.status for r in untrusted.results} == {"n/a"}
