// Benchmark client: the official TypeScript SDK's v2 client app over its Streamable HTTP client transport
// (experimental/http-client createHttpStream). Used only by benchmarks/remote_fold.py, against the same peer
// (peers/remote_blaster.py) as our client. Prints one JSON line: {"updates_per_s": ...}.
import { client } from "@agentclientprotocol/sdk/experimental/v2";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";

const [url, count] = process.argv.slice(2);
const n = Number(count);
const connection = client({ name: "bench" }).connect(createHttpStream(url));
const agent = connection.agent;
await agent.request("initialize", { protocolVersion: 2, info: { name: "bench-ts", version: "1" }, capabilities: {} });
const session = await agent.buildSession("/tmp").start();
await session.prompt("warm up");
await session.readTextUntilIdle();
const start = performance.now();
await session.prompt("go");
const text = await session.readTextUntilIdle();
const elapsed = (performance.now() - start) / 1000;
if (text.length !== 14 * n) throw new Error(`text has ${text.length} characters, expected ${14 * n}`);
console.log(JSON.stringify({ updates_per_s: n / elapsed }));
process.exit(0);
