// Benchmark client built on the official TypeScript SDK's v2 client app (@agentclientprotocol/sdk,
// "experimental/v2"). Used only by benchmarks/compare.py. Prints one JSON line like the Python peers.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { client, ndJsonStream } from "@agentclientprotocol/sdk/experimental/v2";

// Own peak RSS (VmHWM): getrusage's maxRSS would include the forking parent's peak on Linux.
function peakRssKib() {
  try {
    const line = readFileSync("/proc/self/status", "utf8").split("\n").find((l) => l.startsWith("VmHWM:"));
    if (line) return Number(line.split(/\s+/)[1]);
  } catch {}
  return process.resourceUsage().maxRSS;
}

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, value, index, all) => (index % 2 ? pairs : [...pairs, [all[index].replace(/^--/, ""), all[index + 1]]]), []),
);
const n = Number(args.n);
const warmup = Number(args.warmup ?? 0);
const agentArgs = [args.agent, "--wire", "v2", "--n", String(n), "--warmup", String(warmup)];
const child = spawn(args.python, agentArgs, { stdio: ["pipe", "pipe", "inherit"] });
const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const connection = client({ name: "bench" }).connect(stream);
const agent = connection.agent;
await agent.request("initialize", { protocolVersion: 2, info: { name: "bench-ts", version: "1" }, capabilities: {} });
const session = await agent.buildSession("/tmp").start();
if (warmup > 0) {
  // A first, unmeasured turn, as every client in compare.py runs.
  await session.prompt("warm up");
  await session.readTextUntilIdle();
}
const start = performance.now();
await session.prompt("go");
const acceptedAt = Date.now() / 1000;
const text = await session.readTextUntilIdle();
const elapsed = (performance.now() - start) / 1000;
if (text.length !== Number(args["expect-chars"])) {
  throw new Error(`text has ${text.length} characters, expected ${args["expect-chars"]}`);
}
console.log(
  JSON.stringify({
    updates_per_s: n / elapsed,
    cold_start_s: acceptedAt - Number(args.t0),
    peak_rss_kib: peakRssKib(),
  }),
);
child.stdin.end();
child.kill();
process.exit(0);
