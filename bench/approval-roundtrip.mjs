// Approval round trip through the public API (issue 17), on SQLite and on PostgreSQL. One round trip, on a thread of
// its own:
//   (a) prompt → suspended: an Agent with a checkpointer and a ToolGuard asking for approval of `pay` gets
//       `prompt('pay 5')`; the model (FauxProvider) calls `pay`, the guard pauses it, the run ends suspended
//       (agent_end outcome `suspended`) with the request stored. Timed until `prompt()` resolves.
//   (b) another process picks it up: a NEW checkpointer handle on the same store and a NEW Agent (`open`), then
//       `restore()` (`restore`), after which `pending[0].requestId` is read.
//   (c) respond → completed: `respond(requestId, { approve: true })` stores the answer, runs the tool, and the model
//       answers with text; timed until `respond()` resolves (every message is stored before its message_end).
// For comparison, the same conversation without a guard (prompt → tool → answer, one run) on the first handle, also
// on a thread of its own, interleaved with the round trips (a noisy moment hits both alike). Every thread is checked
// at the end: exactly one toolResult for the call, outcome `ok`, the tool ran exactly once, the answer stored, no
// approval left; and after (a), the request stored. Any other result throws.
//
// Run after `npm run build` (it imports the built package by name):  node bench/approval-roundtrip.mjs
//   --n N (200 measured round trips per backend)  --warmup N (20)  --backends sqlite,postgres  --no-write (print only)
// SQLite: a file in a temp dir (default SQLiteCheckpointer settings: WAL, synchronous = FULL), removed after; the new
// handle of (b) opens the file again. PostgreSQL: the PG* variables (default 127.0.0.1:5432, user root, db test), a
// schema of its own, dropped after; the first handle has a pool, the new handles of (b) share a second pool (the
// other process's connections, already open). Never part of `npm test`.
import { execSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path, { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import pg from 'pg';
import { pgConfig, writeResultsSection } from './common.mjs';
import { Agent, ToolGuard, defineTool } from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { PostgresCheckpointer } from 'cubepi/checkpoint/postgres';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const N = Number(option('n', '200'));
const WARMUP = Number(option('warmup', '20'));
const BACKENDS = option('backends', 'sqlite,postgres').split(',');
const WRITE = !args.includes('--no-write');
const RESULTS = fileURLToPath(new URL('./RESULTS.md', import.meta.url));
const HEADING = '## Approval round trip (issue 17)';

// The zod cubepi itself loads (as adapters/cubepi.mjs does): cubepi is linked ("file:.."), so a plain `import 'zod'`
// here would load bench/node_modules' copy next to cubepi's.
async function cubepiZod() {
  const cubepiRequire = createRequire(fileURLToPath(import.meta.resolve('cubepi')));
  const manifest = cubepiRequire.resolve('zod/package.json');
  const { exports } = JSON.parse(readFileSync(manifest, 'utf8'));
  return import(pathToFileURL(path.join(path.dirname(manifest), exports['.'].import)).href);
}
const { z } = await cubepiZod();

// --- the conversation ----------------------------------------------------------------------------------------
/** Tool runs per thread (the call's `ref` argument is its thread id; thread ids are unique in the process). */
const toolRuns = new Map();
const pay = defineTool({
  name: 'pay',
  description: 'Pays an amount',
  parameters: z.object({ amount: z.number(), ref: z.string() }),
  execute: async (_id, { amount, ref }) => {
    toolRuns.set(ref, (toolRuns.get(ref) ?? 0) + 1);
    return `paid ${amount}`;
  },
});
const callOf = (threadId) =>
  fauxMessage([fauxToolCall('pay', { amount: 5, ref: threadId }, { id: `call_${threadId}` })]);
const ANSWER = 'Paid 5.';
const guard = () => new ToolGuard({ policy: ToolGuard.byName({ ask: ['pay'] }) });

/** An Agent on `threadId`, and a function giving the outcome of its last `agent_end`. */
function agentOn(checkpointer, threadId, responses, middleware) {
  const agent = new Agent({
    provider: new FauxProvider({ responses }),
    model: 'faux',
    tools: [pay],
    middleware,
    checkpointer,
    threadId,
  });
  let outcome;
  agent.subscribe((event) => {
    if (event.type === 'agent_end') outcome = event.outcome;
  });
  return { agent, outcome: () => outcome };
}

/** Store calls by method, counted while a phase runs (to say what each phase writes). */
let calls;
function counted(checkpointer) {
  const count = (method) => (calls[method] = (calls[method] ?? 0) + 1);
  return {
    load: (...a) => (count('load'), checkpointer.load(...a)),
    append: (...a) => (count('append'), checkpointer.append(...a)),
    saveExtra: (...a) => (count('saveExtra'), checkpointer.saveExtra(...a)),
    listThreads: (...a) => (count('listThreads'), checkpointer.listThreads(...a)),
    deleteThread: (...a) => (count('deleteThread'), checkpointer.deleteThread(...a)),
    close: () => checkpointer.close(),
  };
}

function check(condition, threadId, what) {
  if (!condition) throw new Error(`${threadId}: ${what}`);
}

/** The stored thread after a completed conversation: one ok result for the call, one tool run, the answer last. */
async function checkCompleted(checkpointer, threadId) {
  const stored = await checkpointer.load(threadId);
  check(stored !== null, threadId, 'thread not stored');
  const results = stored.messages.filter((m) => m.role === 'toolResult');
  check(results.length === 1, threadId, `${results.length} toolResult messages, expected 1`);
  check(results[0].toolCallId === `call_${threadId}`, threadId, `toolResult for ${results[0].toolCallId}`);
  check(results[0].outcome === 'ok', threadId, `toolResult outcome ${results[0].outcome}, expected ok`);
  check(toolRuns.get(threadId) === 1, threadId, `the tool ran ${toolRuns.get(threadId) ?? 0} times, expected 1`);
  const last = stored.messages.at(-1);
  check(
    last?.role === 'assistant' && last.stopReason === 'stop' && last.content[0]?.text === ANSWER,
    threadId,
    `last stored message is not the answer: ${JSON.stringify(last)}`,
  );
  check(stored.messages.length === 4, threadId, `${stored.messages.length} messages stored, expected 4`);
  check(stored.extra['cubepi:approvals'] === undefined, threadId, 'an approval record is still stored');
}

// --- measuring -----------------------------------------------------------------------------------------------
const now = () => process.hrtime.bigint();
const ms = (ns) => Number(ns) / 1e6;

/** One round trip on a thread of its own: the time of each phase, and the store calls of each. */
async function roundTrip(store, threadId) {
  const phaseCalls = {};
  // (a) prompt → suspended, stored
  const first = agentOn(store.main, threadId, [callOf(threadId)], [guard()]);
  calls = phaseCalls.a = {};
  const t0 = now();
  await first.agent.prompt('pay 5');
  const t1 = now();
  check(first.outcome() === 'suspended', threadId, `first run ended ${first.outcome()}, expected suspended`);
  check(toolRuns.get(threadId) === undefined, threadId, 'the tool ran before its approval');
  calls = {};
  const suspended = await store.main.load(threadId);
  const requests = suspended?.extra['cubepi:approvals']?.requests;
  check(requests?.length === 1 && requests[0].toolName === 'pay', threadId, 'the approval request is not stored');

  // (b) another process: a new handle on the same store, a new Agent, restore
  calls = phaseCalls.open = {};
  const t2 = now();
  const handle = store.open();
  const second = agentOn(handle, threadId, [fauxMessage(ANSWER)], [guard()]);
  const t3 = now();
  calls = phaseCalls.b = {};
  await second.agent.restore();
  const requestId = second.agent.pending[0]?.requestId;
  const t4 = now();
  check(second.agent.pending.length === 1 && requestId !== undefined, threadId, 'no pending request after restore');

  // (c) respond → completed
  calls = phaseCalls.c = {};
  const t5 = now();
  await second.agent.respond(requestId, { approve: true });
  const t6 = now();
  calls = {};
  check(second.outcome() === 'completed', threadId, `resumed run ended ${second.outcome()}, expected completed`);
  check(second.agent.pending.length === 0, threadId, 'requests still pending after respond');
  await store.close(handle);
  await checkCompleted(store.main, threadId);
  return {
    a: ms(t1 - t0),
    open: ms(t3 - t2),
    b: ms(t4 - t3),
    c: ms(t6 - t5),
    total: ms(t1 - t0 + (t4 - t2) + (t6 - t5)),
    calls: phaseCalls,
  };
}

/** The same conversation with no guard: prompt → tool → answer, one run. */
async function baseline(store, threadId) {
  const { agent, outcome } = agentOn(store.main, threadId, [callOf(threadId), fauxMessage(ANSWER)], []);
  const runCalls = (calls = {});
  const t0 = now();
  await agent.prompt('pay 5');
  const t1 = now();
  calls = {};
  check(outcome() === 'completed', threadId, `no-guard run ended ${outcome()}, expected completed`);
  await checkCompleted(store.main, threadId);
  return { ms: ms(t1 - t0), calls: runCalls };
}

/** Warm-up, then `n` round trips and `n` baselines, alternating which goes first. */
async function measure(label, store, n, warmup) {
  for (let i = 0; i < warmup; i++) {
    await roundTrip(store, `${label}-warm-rt-${i}`);
    await baseline(store, `${label}-warm-base-${i}`);
  }
  const trips = [];
  const bases = [];
  for (let i = 0; i < n; i++) {
    if (i % 2 === 0) bases.push(await baseline(store, `${label}-base-${i}`));
    trips.push(await roundTrip(store, `${label}-rt-${i}`));
    if (i % 2 === 1) bases.push(await baseline(store, `${label}-base-${i}`));
  }
  return { label, trips, bases };
}

// --- backends ------------------------------------------------------------------------------------------------
async function runSQLite(n, warmup) {
  const dir = mkdtempSync(join(os.tmpdir(), 'cubepi-bench-approval-'));
  const file = join(dir, 'threads.db');
  const main = new SQLiteCheckpointer(file);
  try {
    return await measure(
      'sqlite',
      {
        main: counted(main),
        open: () => counted(new SQLiteCheckpointer(file)),
        close: (handle) => handle.close(),
      },
      n,
      warmup,
    );
  } finally {
    await main.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

let postgresInfo;

async function runPostgres(n, warmup) {
  const schema = `cubepi_bench_approval_${process.pid}`;
  const admin = new pg.Pool({ ...pgConfig(), max: 1 });
  const poolA = new pg.Pool({ ...pgConfig(), max: 2 });
  const poolB = new pg.Pool({ ...pgConfig(), max: 2 });
  try {
    const settings = await admin.query(
      `SELECT current_setting('server_version') AS version, current_setting('fsync') AS fsync,
              current_setting('synchronous_commit') AS synchronous_commit`,
    );
    postgresInfo = settings.rows[0];
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    const main = new PostgresCheckpointer(poolA, { schema });
    try {
      return await measure(
        'postgres',
        {
          main: counted(main),
          open: () => counted(new PostgresCheckpointer(poolB, { schema })),
          close: (handle) => handle.close(),
        },
        n,
        warmup,
      );
    } finally {
      await main.close();
    }
  } finally {
    await poolA.end();
    await poolB.end();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  }
}

// --- report --------------------------------------------------------------------------------------------------
function quantile(xs, q) {
  const s = [...xs].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  return s[lo] + (s[Math.min(lo + 1, s.length - 1)] - s[lo]) * (pos - lo);
}
const median = (xs) => quantile(xs, 0.5);
const fixed = (x) => (x >= 10 ? x.toFixed(1) : x.toFixed(2));
const cell = (xs) => `${fixed(median(xs))} (${fixed(quantile(xs, 0.1))}–${fixed(quantile(xs, 0.9))})`;
const callList = (c) =>
  Object.entries(c)
    .map(([method, k]) => `${k} ${method}`)
    .join(' + ') || 'none';

const writes = (c) => (c.append ?? 0) + (c.saveExtra ?? 0);

function table(results) {
  const lines = [
    '| backend | (a) prompt → suspended | open handle | (b) restore | (c) respond → completed | round trip | no guard | ratio |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const { label, trips, bases } of results) {
    const col = (key) => cell(trips.map((t) => t[key]));
    const base = bases.map((b) => b.ms);
    const ratio = median(trips.map((t) => t.total)) / median(base);
    lines.push(
      `| ${label} | ${col('a')} | ${col('open')} | ${col('b')} | ${col('c')} | ${col('total')} | ${cell(base)} | ${ratio.toFixed(2)} |`,
    );
  }
  return lines.join('\n');
}

function section(results, facts) {
  const sqliteVersion = new Database(':memory:').prepare('SELECT sqlite_version() AS v').get().v;
  const pgLine = postgresInfo
    ? `PostgreSQL ${postgresInfo.version} (fsync=${postgresInfo.fsync}, synchronous_commit=${postgresInfo.synchronous_commit}), same machine, TCP`
    : 'PostgreSQL not measured';
  const { calls: c } = results[0].trips[0];
  const baseCalls = results[0].bases[0].calls;
  return `${HEADING}

\`node bench/approval-roundtrip.mjs\`, ${new Date().toISOString().slice(0, 10)}, commit ${facts.commit}: Node ${process.version},
${os.cpus().length} × ${os.cpus()[0]?.model.trim()}, load average ${facts.loadStart} at start, ${facts.loadEnd} at end;
SQLite ${sqliteVersion} (a file, default settings: WAL, \`synchronous = FULL\`), ${pgLine}.

An approval's whole life through the public API: (a) \`prompt('pay 5')\`, the model (FauxProvider) calls \`pay\`, a
\`ToolGuard\` asks, the run ends \`suspended\` with the request stored; then, as another process would, a new checkpointer
handle on the same store and a new Agent (**open handle**: SQLite opens the file again and checks its schema;
PostgreSQL, a new \`PostgresCheckpointer\` on a second pool whose connections stay open: it connects lazily, so its
schema check, one transaction, falls in (b)), (b) \`restore()\` and \`pending[0].requestId\`,
(c) \`respond(id, { approve: true })\`: the answer stored, the tool run, the model's answer, every message stored.
**no guard**: the same conversation in one run (prompt → tool → answer). ${WARMUP} warm-up round trips, then ${N}
measured (each on a thread of its own, alternating with the no-guard runs); ms, median (p10–p90). **round trip** =
(a) + open + (b) + (c) per trip; **ratio** = its median ÷ the no-guard median. Every thread is checked afterwards
(one toolResult for the call, outcome \`ok\`, the tool ran once, the answer stored, no approval left).
Store calls per phase: (a) ${callList(c.a)}; open ${callList(c.open)}; (b) ${callList(c.b)}; (c) ${callList(c.c)}; no guard
${callList(baseCalls)}: the round trip makes ${writes(c.a) + writes(c.b) + writes(c.c)} writes, the no-guard run ${writes(baseCalls)} (each a commit
that waits for the disk: an fsync in SQLite, a WAL flush in PostgreSQL).

${table(results)}
`;
}

const load = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
const git = (cmd) => execSync(`git ${cmd}`, { cwd: fileURLToPath(new URL('..', import.meta.url)), encoding: 'utf8' });
const facts = { commit: git('rev-parse --short HEAD').trim(), loadStart: load() };
if (git('status --porcelain -- src operators').trim() !== '')
  facts.commit += ' (working tree: uncommitted changes in src/ or operators/)';

const runs = { sqlite: runSQLite, postgres: runPostgres };
const results = [];
for (const backend of BACKENDS) {
  const run = runs[backend];
  if (run === undefined) throw new Error(`unknown backend ${backend}`);
  results.push(await run(N, WARMUP));
  console.error(`${backend}: done`);
}
facts.loadEnd = load();
const text = section(results, facts);
console.log(text);
if (WRITE) {
  writeResultsSection(RESULTS, HEADING, text);
  console.error(`written to ${RESULTS}`);
}
