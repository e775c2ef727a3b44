// The run-event log of cubepi/worker (issue 23) on the local PostgreSQL: what one streamed answer costs to store and
// how soon a reader in another connection sees it. cubepi is loaded from ../dist (npm run build first).
//
// The run: one assistant message of 2,000 text deltas (4–6 characters each, as a model streams them), numbered as
// cubepi/server numbers them, appended in batches of B frames (B = 1: every delta its own statement; 16 and 64: what a
// frame pump flushing every few milliseconds hands over under load), each batch awaited before the next (one writer
// per run). READERS readers subscribed from seq 0 before the first append (in this process: they share the log's one
// LISTEN connection, and query through its pool) follow the live tail.
//
// Metrics per B: append latency per batch (the call → its commit), frames/s appended, tail latency (the append call →
// every reader has the batch's last frame), stored bytes per frame (the frame column; compact deltas), WAL bytes per
// run (pg_current_wal_lsn before/after: includes whatever else the server wrote meanwhile — other sessions share it).
//
//   node run-event-log.mjs [--deltas 2000] [--readers 4] [--no-write]
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { pgConfig, writeResultsSection } from './common.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const DELTAS = Number(arg('deltas', 2000));
const READERS = Number(arg('readers', 4));
const BATCHES = [1, 16, 64];

const dist = new URL('../dist/src/', import.meta.url);
const { MessageAssembler } = await import(new URL('index.js', dist).href);
const { createRunEventLog } = await import(new URL('worker/index.js', dist).href);

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

function scriptedRun(runId) {
  const frames = [];
  const push = (event) =>
    frames.push({ kind: 'event', seq: frames.length + 1, event: { ...event, seq: frames.length + 1 } });
  const update = (streamEvent) => push({ type: 'message_update', runId, message: streamEvent.partial, streamEvent });
  push({ type: 'agent_start', runId });
  const asm = new MessageAssembler({ provider: 'bench', model: 'm', timestamp: 1 });
  push({ type: 'message_start', runId, message: asm.start().partial });
  const text = asm.blockCount;
  update(asm.startText());
  for (let d = 0; d < DELTAS; d++) update(asm.textDelta(text, `w${d} `.padEnd(4 + (d % 3), '·')));
  update(asm.endText(text));
  push({ type: 'message_end', runId, message: asm.done('stop').message });
  frames.push({ kind: 'end', seq: frames.length + 1, runId });
  return frames;
}

async function measure(batch) {
  const schema = `bench_runlog_${randomBytes(4).toString('hex')}`;
  const writerPool = new pg.Pool({ ...pgConfig(), max: 2 });
  const readerPool = new pg.Pool({ ...pgConfig(), max: READERS + 1 });
  const writer = createRunEventLog({ pool: writerPool, schema });
  const reader = createRunEventLog({ pool: readerPool, schema });
  await writer.migrate();
  const runId = `run-${batch}`;
  const frames = scriptedRun(runId);
  // Per reader: the time each seq arrived.
  const arrivals = Array.from({ length: READERS }, () => new Map());
  const done = arrivals.map(
    (arrived) =>
      new Promise((resolve, reject) =>
        reader.runEvents(runId).subscribe({
          next: (frame) => arrived.set(frame.seq, performance.now()),
          error: reject,
          complete: resolve,
        }),
      ),
  );
  // The run's channel LISTENed before the first append (asked of the listener's session: an internal seam), then time
  // for every reader's first query.
  while ((await reader.listenerSession())?.channels.length !== 1) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 100));
  const lsn = async () => (await writerPool.query('SELECT pg_current_wal_lsn() AS lsn')).rows[0].lsn;
  const walBefore = await lsn();
  const appends = [];
  const started = new Map(); // last seq of a batch → when its append was called
  const t0 = performance.now();
  for (let i = 0; i < frames.length; i += batch) {
    const slice = frames.slice(i, i + batch);
    const t = performance.now();
    started.set(slice.at(-1).seq, t);
    await writer.appendRunEvents(runId, slice);
    appends.push(performance.now() - t);
  }
  const elapsed = performance.now() - t0;
  await Promise.all(done);
  const walAfter = await lsn();
  const { rows } = await writerPool.query(
    `SELECT pg_wal_lsn_diff($2, $1)::float8 AS wal, (SELECT sum(octet_length(payload))::float8 FROM "${schema}".cubepi_run_events_v3) AS bytes`,
    [walBefore, walAfter],
  );
  const tails = [];
  for (const [seq, t] of started) tails.push(Math.max(...arrivals.map((arrived) => arrived.get(seq))) - t);
  await reader.close(); // its LISTEN connection
  await readerPool.end();
  await writerPool.query(`DROP SCHEMA "${schema}" CASCADE`);
  await writerPool.end();
  return {
    batch,
    frames: frames.length,
    statements: appends.length,
    appendP50: quantile(appends, 0.5),
    appendP95: quantile(appends, 0.95),
    framesPerSecond: frames.length / (elapsed / 1000),
    tailP50: quantile(tails, 0.5),
    tailP95: quantile(tails, 0.95),
    bytesPerFrame: rows[0].bytes / frames.length,
    walPerRun: rows[0].wal,
  };
}

const results = [];
for (const batch of BATCHES) {
  const result = await measure(batch);
  results.push(result);
  console.log(JSON.stringify(result, (_, v) => (typeof v === 'number' ? Math.round(v * 100) / 100 : v)));
}

const f = (v, d = 2) => v.toFixed(d);
const text = `## Run-event log (run-event-log.mjs)

cubepi/worker's run-event log, Node ${process.version}, local PostgreSQL, ${new Date().toISOString().slice(0, 10)}. One
answer of ${DELTAS} text deltas (${results[0].frames} frames) appended in batches of B frames, each awaited; ${READERS}
readers (one LISTEN connection between them, same process) subscribed from seq 0 follow the live tail. Tail = the append call → every
reader has the batch's last frame. WAL includes whatever else the shared server wrote meanwhile.

| B | statements | append p50 ms | append p95 ms | frames/s | tail p50 ms | tail p95 ms | stored bytes/frame | WAL KiB/run |
|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${results
  .map(
    (r) =>
      `| ${r.batch} | ${r.statements} | ${f(r.appendP50)} | ${f(r.appendP95)} | ${f(r.framesPerSecond, 0)} | ${f(r.tailP50)} | ${f(r.tailP95)} | ${f(r.bytesPerFrame, 0)} | ${f(r.walPerRun / 1024, 0)} |`,
  )
  .join('\n')}
`;
console.log(`\n${text}`);
if (!process.argv.includes('--no-write'))
  writeResultsSection(new URL('RESULTS.md', import.meta.url).pathname, '## Run-event log', text);
