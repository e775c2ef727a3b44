// Issue 15: how SQLiteCheckpointer keeps the event loop turning while another connection holds SQLite's write lock,
// against the alternative that was considered, in one process:
//
// - in-thread: cubepi's SQLiteCheckpointer (busy_timeout 0 on its connection, a refused call retried on later turns of
//   the event loop with backoff);
// - worker: a prototype that runs the same statements in a worker thread (its own connection, SQLite's busy handler
//   waiting there), each call one postMessage round trip;
// - blocking: SQLiteCheckpointer on a Database with better-sqlite3's default busy timeout (5 s), i.e. what every call
//   did before issue 15.
//
// Part 1, no contention: ms per W3 turn (a thread of H messages; +4 messages: four single-message appends and one
// saveExtra as an Agent writes them, or one append of four and one saveExtra), the modes taken round-robin.
// Part 2, contention: another thread holds the write lock for --hold ms; event-loop turns counted (a setTimeout(0)
// chain) while an append waits, and how long after the release the append finished.
//
//   node sqlite-busy.mjs [--turns 200] [--hold 500] [--reps 5]      (after `npm run build` at the root)
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { canonicalJson, EMPTY_USAGE } from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return Number(i >= 0 ? args[i + 1] : fallback);
};
const TURNS = option('turns', 200);
const HOLD_MS = option('hold', 500);
const REPS = option('reps', 5);
const H = 1000;
// Every connection here, in every thread, goes through the better-sqlite3 that cubepi loads: a second copy of SQLite
// in one process does not see the first one's locks (POSIX locks belong to the process; each copy tracks its own), so
// bench/node_modules/better-sqlite3 next to ../node_modules/better-sqlite3 would let two writers in at once.
const cubepiRequire = createRequire(fileURLToPath(import.meta.resolve('cubepi/checkpoint/sqlite')));
const driver = cubepiRequire.resolve('better-sqlite3');
const Database = cubepiRequire('better-sqlite3');
const dir = mkdtempSync(join(os.tmpdir(), 'cubepi-busy-'));

// --- W3 content, as in checkpoint-cost.mjs -----------------------------------------------------------------------
const FILL = 'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut';
function group(i) {
  const assistant = (content, stopReason) => ({
    role: 'assistant',
    content,
    stopReason,
    usage: EMPTY_USAGE,
    provider: 'faux',
    model: 'faux-1',
    timestamp: i,
  });
  return [
    { role: 'user', content: `question ${i}: ${FILL}`, timestamp: i },
    assistant([{ type: 'toolCall', id: `call_${i}`, name: 'echo', arguments: { i } }], 'toolUse'),
    {
      role: 'toolResult',
      toolCallId: `call_${i}`,
      toolName: 'echo',
      content: [{ type: 'text', text: `result ${i}: ${FILL.slice(0, 40)}` }],
      isError: false,
      timestamp: i,
    },
    assistant([{ type: 'text', text: `answer ${i}: ${FILL}` }], 'stop'),
  ];
}

// --- the worker-thread prototype ---------------------------------------------------------------------------------
// The same tables and the same append transaction as SQLiteCheckpointer, on a connection owned by a worker thread;
// the main thread encodes the messages (as the checkpointer does) and posts the rows.
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { timeout: 5000 });
db.pragma('synchronous = ' + workerData.synchronous);
const selectThread = db.prepare('SELECT id, next_seq FROM cubepi_threads WHERE thread_id = ?');
const insertThread = db.prepare('INSERT INTO cubepi_threads (thread_id, next_seq, extra, created_at, updated_at) VALUES (?, ?, ?, ?, ?)');
const updateSeq = db.prepare('UPDATE cubepi_threads SET next_seq = ?, updated_at = ? WHERE id = ?');
const insertMessage = db.prepare('INSERT INTO cubepi_messages (thread_id, seq, body) VALUES (?, ?, ?)');
const upsertExtra = db.prepare(\`INSERT INTO cubepi_threads (thread_id, next_seq, extra, created_at, updated_at)
  VALUES (?, 0, ?, ?, ?) ON CONFLICT (thread_id) DO UPDATE SET extra = excluded.extra, updated_at = excluded.updated_at\`);
const write = db.transaction((threadId, rows, expected) => {
  const thread = selectThread.get(threadId);
  const actual = thread ? thread.next_seq : 0;
  if (expected !== undefined && expected !== actual) throw Object.assign(new Error('conflict'), { code: 'conflict' });
  const now = Date.now();
  const next = actual + rows.length;
  if (thread === undefined) insertThread.run(threadId, next, '{}', now, now);
  else updateSeq.run(next, now, thread.id);
  for (let i = 0; i < rows.length; i++) insertMessage.run(threadId, actual + i, rows[i]);
  return next;
});
parentPort.on('message', ({ id, op, threadId, rows, expected, extra }) => {
  try {
    if (op === 'append') parentPort.postMessage({ id, result: write.immediate(threadId, rows, expected) });
    else { const now = Date.now(); upsertExtra.run(threadId, extra, now, now); parentPort.postMessage({ id }); }
  } catch (error) {
    parentPort.postMessage({ id, error: { code: error.code, message: error.message } });
  }
});
`;

function workerStore(file, synchronous) {
  new SQLiteCheckpointer(file).close(); // create the tables
  const worker = new Worker(WORKER, { eval: true, workerData: { driver, file, synchronous } });
  const pending = new Map();
  let next = 0;
  worker.on('message', ({ id, result, error }) => {
    const { resolve, reject } = pending.get(id);
    pending.delete(id);
    if (error) reject(Object.assign(new Error(error.message), { code: error.code }));
    else resolve(result);
  });
  const call = (message) =>
    new Promise((resolve, reject) => {
      const id = next++;
      pending.set(id, { resolve, reject });
      worker.postMessage({ id, ...message });
    });
  return {
    append: async (threadId, messages, options) => ({
      seq: await call({ op: 'append', threadId, rows: messages.map(canonicalJson), expected: options?.expectedSeq }),
    }),
    saveExtra: (threadId, extra) => call({ op: 'saveExtra', threadId, extra: canonicalJson(extra) }),
    close: () => worker.terminate(),
  };
}

function inThreadStore(file, synchronous) {
  return new SQLiteCheckpointer(file, { synchronous });
}

function blockingStore(file, synchronous) {
  const db = new Database(file); // better-sqlite3's default busy timeout: 5000 ms, waited on the thread
  db.pragma(`synchronous = ${synchronous}`);
  const checkpointer = new SQLiteCheckpointer(db);
  return {
    append: (...a) => checkpointer.append(...a),
    saveExtra: (...a) => checkpointer.saveExtra(...a),
    close: () => db.close(),
  };
}

// --- part 1: cost per turn, no contention --------------------------------------------------------------------------
const now = () => process.hrtime.bigint();
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function turn(store, state, path, i) {
  const t0 = now();
  if (path === 'agent') {
    for (const message of group(i))
      ({ seq: state.seq } = await store.append('t', [message], { expectedSeq: state.seq }));
  } else {
    ({ seq: state.seq } = await store.append('t', group(i), { expectedSeq: state.seq }));
  }
  await store.saveExtra('t', { turn: i });
  return Number(now() - t0) / 1e6;
}

const MODES = { 'in-thread': inThreadStore, worker: workerStore };
const costs = [];
for (const synchronous of ['full', 'normal']) {
  for (const path of ['agent', 'batch']) {
    const stores = Object.entries(MODES).map(([mode, open], k) => {
      const file = join(dir, `cost-${synchronous}-${path}-${k}.db`);
      return { mode, store: open(file, synchronous), state: { seq: 0 }, ms: [] };
    });
    for (const s of stores) {
      for (let g = 0; s.state.seq < H; g += 100) {
        const batch = Array.from({ length: 100 }, (_, j) => group(g + j)).flat();
        ({ seq: s.state.seq } = await s.store.append('t', batch, { expectedSeq: s.state.seq }));
      }
    }
    for (let t = 0; t < TURNS + 10; t++) {
      for (const s of t % 2 ? stores : [...stores].reverse()) {
        const ms = await turn(s.store, s.state, path, 1_000_000 + t);
        if (t >= 10) s.ms.push(ms); // the first 10 warm up
      }
    }
    const [inThread, worker] = stores.map((s) => median(s.ms));
    costs.push({ synchronous, path, inThread, worker });
    for (const s of stores) await s.store.close();
  }
}

// --- part 2: contention ------------------------------------------------------------------------------------------
/** Holds the write lock on `file` from another thread for `ms`; resolves once the lock is taken. */
function holdLock(file, ms) {
  const holder = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     const db = new (require(workerData.driver))(workerData.file);
     db.exec('BEGIN IMMEDIATE');
     parentPort.postMessage('held');
     setTimeout(() => {
       db.exec('COMMIT');
       parentPort.postMessage({ releasedAt: performance.timeOrigin + performance.now() });
       db.close();
     }, workerData.ms);`,
    { eval: true, workerData: { driver, file, ms } },
  );
  const released = new Promise((resolve) => holder.on('message', (m) => m.releasedAt && resolve(m.releasedAt)));
  return new Promise((resolve) => holder.once('message', () => resolve({ released: () => released })));
}

const waits = [];
for (const [mode, open] of Object.entries({ ...MODES, blocking: blockingStore })) {
  for (let rep = 0; rep < REPS; rep++) {
    const file = join(dir, `busy-${mode}-${rep}.db`);
    const store = open(file, 'normal');
    await store.append('t', group(0));
    const lock = await holdLock(file, HOLD_MS);
    let ticks = 0;
    let timer = setTimeout(function tick() {
      ticks++;
      timer = setTimeout(tick, 0);
    }, 0);
    const t0 = performance.now();
    await store.append('t', group(1), { expectedSeq: 4 });
    const t1 = performance.now();
    clearTimeout(timer);
    // Both clocks in ms since the epoch: the release is stamped in the holder's thread, when it commits.
    const afterReleaseMs = performance.timeOrigin + t1 - (await lock.released());
    waits.push({ mode, ticks, waitMs: t1 - t0, afterReleaseMs });
    await store.close();
  }
}
rmSync(dir, { recursive: true, force: true });

// --- report --------------------------------------------------------------------------------------------------------
const f = (n) => n.toFixed(3);
console.log(
  `Node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model.trim()}; H = ${H}, ${TURNS} turns each`,
);
console.log('\n| synchronous | write path | in-thread ms/turn | worker ms/turn | worker ÷ in-thread |');
console.log('| --- | --- | ---: | ---: | ---: |');
for (const c of costs) {
  console.log(
    `| ${c.synchronous} | ${c.path} | ${f(c.inThread)} | ${f(c.worker)} | ${(c.worker / c.inThread).toFixed(2)} |`,
  );
}
console.log(`\nLock held by another thread for ${HOLD_MS} ms; an append waits for it (median of ${REPS}, min–max):`);
console.log('\n| mode | event-loop turns while waiting | append took ms | finished ms after the release |');
console.log('| --- | ---: | ---: | ---: |');
for (const mode of [...Object.keys(MODES), 'blocking']) {
  const rows = waits.filter((w) => w.mode === mode);
  const cell = (key, d) => {
    const xs = rows.map((r) => r[key]);
    return `${median(xs).toFixed(d)} (${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)})`;
  };
  console.log(`| ${mode} | ${cell('ticks', 0)} | ${cell('waitMs', 1)} | ${cell('afterReleaseMs', 1)} |`);
}
