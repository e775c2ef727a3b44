// Issue 36 item 7: what a large MCP result costs the client over stdio. The same SDK Client calls a raw stdio server
// (test/mcp/servers/raw-server.ts, its `big` tool: one text result of N bytes written at once) through two transports:
//
// - sdk: the SDK's StdioClientTransport with cubepi's former bound (maxBufferSize 32 MiB), i.e. what mcpTools used;
// - cubepi: the transport mcpTools now uses (dist/src/mcp/stdio-client-transport.js, its JsonRpcLineReader);
// - pipe: the floor, the same bytes read from the server's stdout and thrown away (no framing, no JSON).
//
// Per size: the wall time of the call (request sent → result parsed) and the longest the event loop was blocked
// meanwhile (perf_hooks.monitorEventLoopDelay, 10 ms resolution), median of --reps.
//
//   npm run build && node bench/mcp-large-results.mjs [--sizes 2,10,20] [--reps 3]
import { spawn } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StdioClientLineTransport } from '../dist/src/mcp/stdio-client-transport.js';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const sizes = option('sizes', '2,10,20').split(',').map(Number);
const reps = Number(option('reps', '3'));
const root = fileURLToPath(new URL('..', import.meta.url));
const server = { command: process.execPath, args: ['--import', 'tsx', 'test/mcp/servers/raw-server.ts'], cwd: root };
const MAX = 32 * 1024 * 1024;

const transports = {
  sdk: () => new StdioClientTransport({ ...server, stderr: 'ignore', maxBufferSize: MAX }),
  cubepi: () => new StdioClientLineTransport({ ...server, stderr: 'ignore', maxMessageBytes: MAX }),
};

async function measure(run) {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const started = performance.now();
  await run();
  const ms = performance.now() - started;
  delay.disable();
  return { ms, blockedMs: delay.max / 1e6 };
}

async function viaClient(kind, bytes) {
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(transports[kind]());
  try {
    await client.callTool({ name: 'big', arguments: { bytes: 1000 } }); // warm: the server's code loaded
    return await measure(async () => {
      const result = await client.callTool({ name: 'big', arguments: { bytes } }, undefined, { timeout: 600_000 });
      if (result.content[0].text.length !== bytes) throw new Error('short result');
    });
  } finally {
    await client.close();
  }
}

/** The floor: the server's line read off the pipe and dropped, no framing and no JSON. */
async function viaPipe(bytes) {
  const child = spawn(server.command, server.args, { cwd: root, stdio: ['pipe', 'pipe', 'ignore'] });
  const line = (id, method, params) => `${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`;
  let waiting;
  let seen = 0;
  child.stdout.on('data', (chunk) => {
    for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) {
      seen++;
      waiting?.();
    }
  });
  const next = (count) =>
    new Promise((resolve) => {
      waiting = () => seen >= count && resolve();
      waiting();
    });
  child.stdin.write(line(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'b', version: '1' } }));
  await next(1);
  const result = await measure(async () => {
    child.stdin.write(line(2, 'tools/call', { name: 'big', arguments: { bytes } }));
    await next(2);
  });
  child.kill();
  return result;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const rows = [];
for (const mb of sizes) {
  const bytes = mb * 1_000_000;
  for (const kind of ['sdk', 'cubepi', 'pipe']) {
    const samples = [];
    for (let i = 0; i < reps; i++) samples.push(kind === 'pipe' ? await viaPipe(bytes) : await viaClient(kind, bytes));
    const row = {
      size: `${mb} MB`,
      transport: kind,
      ms: Math.round(median(samples.map((s) => s.ms))),
      maxBlockedMs: Math.round(median(samples.map((s) => s.blockedMs))),
    };
    rows.push(row);
    console.log(JSON.stringify(row));
  }
}
console.log('\n| size | transport | call, ms (median) | longest event-loop block, ms |\n| --- | --- | --- | --- |');
for (const row of rows) console.log(`| ${row.size} | ${row.transport} | ${row.ms} | ${row.maxBlockedMs} |`);
