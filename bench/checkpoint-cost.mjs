// Checkpoint cost vs history length (the W3 workload of ../shared/bench-peers): a thread is seeded to H messages,
// then 1 warm-up and N measured turns append 4 messages each (user → assistant tool call → tool result → answer).
// Per turn: wall time, bytes this process passed to write() (wchar, /proc/self/io), store growth (SQLite: db + WAL
// file sizes; PostgreSQL: server WAL bytes), logical bytes (the canonical JSON of the new messages). Plus load time.
//
// Two write paths per backend:
//   agent  — what an Agent does: the events of the two model turns go through `appendToCheckpoint`, so each message
//            is its own append (with expectedSeq), and `extra` (which changes once per turn here) is saved at a
//            turn_end when it differs from what the store holds, as the Agent passes `storedExtra`: once per turn.
//   batch  — one append of the 4 messages: the floor.
//
// Plus the fork row: a thread seeded to H messages is forked (`checkpointer.fork`) 1 + F times at atSeq = H - 4 (an
// "edit and resend" of the last turn's prompt); per fork: wall time, wchar, store growth, and rows written.
//
// Run after `npm run build` (it imports the built package by name):  node bench/checkpoint-cost.mjs
//   --turns N (30)  --sizes 100,1000,10000  --backends sqlite,sqlite-normal,postgres  --no-write (print only)
//   --forks F (20)  --fork-sizes 1000,10000
// PostgreSQL: the PG* variables (default 127.0.0.1:5432, user root, db test); a schema of its own, dropped after.
// Never part of `npm test`.
import { mkdtempSync, readFileSync, rmSync, statSync, existsSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import pg from 'pg';
import { pgConfig, writeResultsSection } from './common.mjs';
import { from, lastValueFrom } from 'rxjs';
import { canonicalJson, EMPTY_USAGE } from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { PostgresCheckpointer } from 'cubepi/checkpoint/postgres';
import { appendToCheckpoint } from 'cubepi/operators';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const TURNS = Number(option('turns', '30'));
const SIZES = option('sizes', '100,1000,10000').split(',').map(Number);
const BACKENDS = option('backends', 'sqlite,sqlite-normal,postgres').split(',');
const FORKS = Number(option('forks', '20'));
const FORK_SIZES = option('fork-sizes', '1000,10000').split(',').map(Number);
const WRITE = !args.includes('--no-write');
const RESULTS = fileURLToPath(new URL('./RESULTS.md', import.meta.url));
const HEADING = '## Checkpoint cost vs history (W3)';

// --- W3 content (bench-peers common.mjs seedGroup) -------------------------------------------------------------
const FILL = 'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut';
const seedGroup = (i) => ({
  user: `question ${i}: ${FILL}`,
  toolArgs: { i },
  toolResult: `result ${i}: ${FILL.slice(0, 40)}`,
  answer: `answer ${i}: ${FILL}`,
});
const T0 = 1_700_000_000_000;
function group(i) {
  const s = seedGroup(i);
  const assistant = (content, stopReason) => ({
    role: 'assistant',
    content,
    stopReason,
    usage: EMPTY_USAGE,
    provider: 'faux',
    model: 'faux-1',
    timestamp: T0 + i,
  });
  return [
    { role: 'user', content: s.user, timestamp: T0 + i },
    assistant([{ type: 'toolCall', id: `call_${i}`, name: 'echo', arguments: s.toolArgs }], 'toolUse'),
    {
      role: 'toolResult',
      toolCallId: `call_${i}`,
      toolName: 'echo',
      content: [{ type: 'text', text: s.toolResult }],
      isError: false,
      timestamp: T0 + i,
    },
    assistant([{ type: 'text', text: s.answer }], 'stop'),
  ];
}

/** The agent events of one W3 turn (two model calls): what `appendToCheckpoint` sees from a run. */
function turnEvents(i) {
  const [user, call, result, answer] = group(i);
  const runId = `run-${i}`;
  return [
    { type: 'agent_start', runId },
    { type: 'turn_start', runId, turnIndex: 0 },
    { type: 'message_start', runId, message: user },
    { type: 'message_end', runId, message: user },
    { type: 'message_start', runId, message: call },
    { type: 'message_end', runId, message: call },
    { type: 'tool_execution_start', runId, toolCallId: `call_${i}`, toolName: 'echo', args: { i } },
    { type: 'tool_execution_end', runId, toolCallId: `call_${i}`, toolName: 'echo', result: {}, isError: false },
    { type: 'message_start', runId, message: result },
    { type: 'message_end', runId, message: result },
    { type: 'turn_end', runId, turnIndex: 0, message: call, toolResults: [result] },
    { type: 'turn_start', runId, turnIndex: 1 },
    { type: 'message_start', runId, message: answer },
    { type: 'message_end', runId, message: answer },
    { type: 'turn_end', runId, turnIndex: 1, message: answer, toolResults: [] },
    { type: 'agent_end', runId, messages: [user, call, result, answer] },
  ];
}

// --- measuring -----------------------------------------------------------------------------------------------
const now = () => process.hrtime.bigint();
const ms = (ns) => Number(ns) / 1e6;
function wchar() {
  const line = readFileSync('/proc/self/io', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('wchar:'));
  return Number(line.split(':')[1]);
}
const size = (path) => (existsSync(path) ? statSync(path).size : 0);
function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
const bytes = (messages) => messages.reduce((n, m) => n + Buffer.byteLength(canonicalJson(m)), 0);

async function seed(checkpointer, threadId, H) {
  let seq = 0;
  for (let g = 0; seq < H;) {
    const batch = [];
    while (batch.length < 400) batch.push(...group(g++));
    ({ seq } = await checkpointer.append(threadId, batch.slice(0, H - seq), { expectedSeq: seq }));
  }
  return seq;
}

/** One W3 turn on a store: its cost, and the store's new seq. `growth()` is read outside the wchar window. */
async function oneTurn(store, path, t) {
  const { checkpointer, threadId } = store;
  const i = 1_000_000 + t;
  const g0 = await store.growth();
  const w0 = wchar();
  const t0 = now();
  if (path === 'agent') {
    const sink = appendToCheckpoint(checkpointer, threadId, {
      seq: store.seq,
      extra: () => ({ turn: t }),
      storedExtra: store.extra,
      onAppended: (seq) => (store.seq = seq),
      onExtraSaved: (extra) => (store.extra = extra),
    });
    await lastValueFrom(from(turnEvents(i)).pipe(sink), { defaultValue: undefined });
  } else {
    ({ seq: store.seq } = await checkpointer.append(threadId, group(i), { expectedSeq: store.seq }));
    await checkpointer.saveExtra(threadId, { turn: t });
  }
  const t1 = now();
  const w1 = wchar();
  const g1 = await store.growth();
  return { ms: ms(t1 - t0), wchar: w1 - w0, growth: g1 - g0, logical: bytes(group(i)) };
}

/**
 * Measures one backend: for each write path, one store per H, seeded, then 1 warm-up + `turns` turns taken
 * round-robin across the H values (a noisy moment on this shared machine hits every H alike), then loads.
 * `openStore(H, path)` gives `{ checkpointer, prepare(), growth(), close() }`.
 */
async function runBackend(label, openStore, sizes, turns) {
  const results = [];
  for (const path of ['agent', 'batch']) {
    const stores = [];
    try {
      for (const H of sizes) {
        const store = { ...(await openStore(H, path)), H, threadId: `w3-${path}`, rows: [] };
        stores.push(store);
        store.seq = await seed(store.checkpointer, store.threadId, H);
      }
      for (const store of stores) await store.prepare();
      for (let t = 0; t <= turns; t++) {
        for (const store of stores) {
          const row = await oneTurn(store, path, t);
          if (t > 0) store.rows.push(row);
        }
      }
      for (const store of stores) {
        const loads = [];
        for (let k = 0; k < 5; k++) {
          const t0 = now();
          const saved = await store.checkpointer.load(store.threadId);
          loads.push(ms(now() - t0));
          if (saved.seq !== store.seq) throw new Error(`loaded ${saved.seq} messages, expected ${store.seq}`);
        }
        const col = (key) => median(store.rows.map((r) => r[key]));
        results.push({
          backend: label,
          path,
          H: store.H,
          ms: col('ms'),
          wchar: col('wchar'),
          growth: col('growth'),
          logical: col('logical'),
          loadMs: median(loads),
        });
      }
    } finally {
      for (const store of stores) await store.close();
    }
  }
  return results.sort((a, b) => a.H - b.H || (a.path === 'agent' ? -1 : 1));
}

// --- backends ------------------------------------------------------------------------------------------------
/** A SQLite store of its own (a temporary file): `{ checkpointer, prepare(), growth(), rows(), close() }`. */
function sqliteStore(synchronous) {
  return async () => {
    const dir = mkdtempSync(join(os.tmpdir(), 'cubepi-bench-'));
    const file = join(dir, 'threads.db');
    const checkpointer = new SQLiteCheckpointer(file, { synchronous });
    const side = new Database(file);
    return {
      checkpointer,
      // Start the measured turns with an empty WAL, so its growth is what the turns write.
      prepare: async () => void side.pragma('wal_checkpoint(TRUNCATE)'),
      growth: async () => size(file) + size(`${file}-wal`),
      rows: async () => ({
        threads: side.prepare('SELECT count(*) FROM cubepi_threads').pluck().get(),
        messages: side.prepare('SELECT count(*) FROM cubepi_messages').pluck().get(),
      }),
      close: async () => {
        side.close();
        await checkpointer.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  };
}

function runSQLite(synchronous, sizes, turns) {
  return runBackend(`sqlite (${synchronous})`, sqliteStore(synchronous), sizes, turns);
}

let postgresInfo;

/** Runs `run(admin)` on the PostgreSQL server, noting its version and durability settings for the report. */
async function onPostgres(run) {
  const admin = new pg.Pool({ ...pgConfig(), max: 1 });
  try {
    const settings = await admin.query(
      `SELECT current_setting('server_version') AS version, current_setting('fsync') AS fsync,
              current_setting('synchronous_commit') AS synchronous_commit,
              current_setting('full_page_writes') AS full_page_writes`,
    );
    postgresInfo = settings.rows[0];
    return await run(admin);
  } finally {
    await admin.end();
  }
}

/** A PostgreSQL store of its own (a schema, dropped on close), as {@link sqliteStore} gives. */
function postgresStore(admin) {
  return async (H, path) => {
    const schema = `cubepi_bench_${process.pid}_${H}_${path}`;
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    const pool = new pg.Pool({ ...pgConfig(), max: 2 });
    return {
      checkpointer: new PostgresCheckpointer(pool, { schema }),
      // Full-page images after a checkpoint would otherwise land in the first turns.
      prepare: async () => void (await admin.query('CHECKPOINT')),
      // WAL the whole server generated: other clients add noise, which the median absorbs.
      growth: async () => {
        const { rows } = await admin.query(`SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::float8 AS b`);
        return rows[0].b;
      },
      rows: async () => {
        const { rows } = await admin.query(
          `SELECT (SELECT count(*)::int FROM "${schema}".cubepi_threads) AS threads,
                  (SELECT count(*)::int FROM "${schema}".cubepi_messages) AS messages`,
        );
        return rows[0];
      },
      close: async () => {
        await pool.end();
        await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      },
    };
  };
}

/**
 * The fork row: per H, one store seeded to H messages; then 1 warm-up and `forks` forks at atSeq = H - 4, taken
 * round-robin across the H values (as the turns are), each measured alone (time, wchar, store growth, rows
 * written); then loads of the last fork.
 */
async function runForks(label, openStore, sizes, forks) {
  const threadId = 'w3-fork-parent';
  const stores = [];
  try {
    for (const H of sizes) {
      const store = { ...(await openStore(H, 'fork')), H, measured: [] };
      stores.push(store);
      await seed(store.checkpointer, threadId, H);
    }
    for (const store of stores) await store.prepare();
    for (let k = 0; k <= forks; k++) {
      for (const store of stores) {
        const before = await store.rows();
        const g0 = await store.growth();
        const w0 = wchar();
        const t0 = now();
        await store.checkpointer.fork(threadId, { atSeq: store.H - 4, newThreadId: `fork-${k}` });
        const t1 = now();
        const w1 = wchar();
        const g1 = await store.growth();
        const after = await store.rows();
        const written = { threads: after.threads - before.threads, messages: after.messages - before.messages };
        if (k > 0) store.measured.push({ ms: ms(t1 - t0), wchar: w1 - w0, growth: g1 - g0, ...written });
      }
    }
    const results = [];
    for (const store of stores) results.push(await forkResult(label, store, `fork-${forks}`));
    return results;
  } finally {
    for (const store of stores) await store.close();
  }
}

/** One fork row: the medians of a store's forks, the most rows any fork wrote, and the load time of a fork. */
async function forkResult(label, store, forkId) {
  const loads = [];
  for (let k = 0; k < 5; k++) {
    const t0 = now();
    const saved = await store.checkpointer.load(forkId);
    loads.push(ms(now() - t0));
    if (saved.seq !== store.H - 4) throw new Error(`the fork loaded ${saved.seq} messages, expected ${store.H - 4}`);
  }
  const col = (key) => median(store.measured.map((r) => r[key]));
  return {
    backend: label,
    H: store.H,
    ms: col('ms'),
    wchar: col('wchar'),
    growth: col('growth'),
    threadRows: Math.max(...store.measured.map((r) => r.threads)),
    messageRows: Math.max(...store.measured.map((r) => r.messages)),
    loadMs: median(loads),
  };
}

// --- report --------------------------------------------------------------------------------------------------
const kb = (n) => (n >= 10_000 ? `${(n / 1024).toFixed(1)} KiB` : `${Math.round(n)} B`);
const fixed = (n, d = 2) => n.toFixed(d);

function forkTable(results) {
  const lines = [
    `| backend | H | ms / fork | wchar / fork | store growth / fork | thread rows / fork | message rows / fork | load ms (fork) |`,
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of results) {
    lines.push(
      `| ${r.backend} | ${r.H.toLocaleString('en')} | ${fixed(r.ms)} | ${kb(r.wchar)} | ${kb(r.growth)} | ${r.threadRows} | ${r.messageRows} | ${fixed(r.loadMs, 1)} |`,
    );
  }
  const [small, large] = [FORK_SIZES[0], FORK_SIZES.at(-1)];
  lines.push(
    '',
    `Flatness of a fork: H = ${large.toLocaleString('en')} divided by H = ${small.toLocaleString('en')} (1.00 = flat).`,
    '',
    '| backend | ms | wchar | store growth | load ms |',
    '| --- | ---: | ---: | ---: | ---: |',
  );
  const ratio = (a, b) => (b === 0 ? (a === 0 ? '1.00' : '∞') : fixed(a / b));
  for (const r of results.filter((x) => x.H === large)) {
    const base = results.find((x) => x.backend === r.backend && x.H === small);
    lines.push(
      `| ${r.backend} | ${ratio(r.ms, base.ms)} | ${ratio(r.wchar, base.wchar)} | ${ratio(r.growth, base.growth)} | ${ratio(r.loadMs, base.loadMs)} |`,
    );
  }
  return lines.join('\n');
}

function table(results) {
  const lines = [
    '| backend | write path | H | ms / turn | wchar / turn | store growth / turn | logical / turn | load ms |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of results) {
    lines.push(
      `| ${r.backend} | ${r.path} | ${r.H.toLocaleString('en')} | ${fixed(r.ms)} | ${kb(r.wchar)} | ${kb(r.growth)} | ${kb(r.logical)} | ${fixed(r.loadMs, 1)} |`,
    );
  }
  const ratios = [
    '',
    `Flatness: median per-turn cost at H = ${SIZES.at(-1).toLocaleString('en')} divided by H = ${SIZES[0].toLocaleString('en')} (1.00 = flat).`,
    '',
    '| backend | write path | ms | wchar | store growth | logical | load ms |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: |',
  ];
  const ratio = (a, b) => (b === 0 ? (a === 0 ? '1.00' : '∞') : fixed(a / b));
  for (const r of results.filter((x) => x.H === SIZES.at(-1))) {
    const base = results.find((x) => x.backend === r.backend && x.path === r.path && x.H === SIZES[0]);
    ratios.push(
      `| ${r.backend} | ${r.path} | ${ratio(r.ms, base.ms)} | ${ratio(r.wchar, base.wchar)} | ${ratio(r.growth, base.growth)} | ${ratio(r.logical, base.logical)} | ${ratio(r.loadMs, base.loadMs)} |`,
    );
  }
  return [...lines, ...ratios].join('\n');
}

function section(results, forkResults) {
  const sqliteVersion = new Database(':memory:').prepare('SELECT sqlite_version() AS v').get().v;
  const pgLine = postgresInfo
    ? `PostgreSQL ${postgresInfo.version} (fsync=${postgresInfo.fsync}, synchronous_commit=${postgresInfo.synchronous_commit}, full_page_writes=${postgresInfo.full_page_writes}), same machine, TCP`
    : 'PostgreSQL not measured';
  return `${HEADING}

\`node bench/checkpoint-cost.mjs\` (after \`npm run build\`), ${new Date().toISOString().slice(0, 10)}: Node ${process.version},
${os.cpus().length} × ${os.cpus()[0]?.model.trim()}, SQLite ${sqliteVersion} (better-sqlite3), ${pgLine}.

W3 of \`../shared/bench-peers\`: one thread seeded to H messages (seedGroup content), then 1 warm-up and ${TURNS}
measured turns of +4 messages (user → assistant tool call → tool result → answer), taken round-robin across the H
values (a noisy moment hits every H alike); medians per turn.

- **agent**: the events of the turn's two model calls go through \`appendToCheckpoint\`, as an Agent's run does: four
  appends of one message (each with \`expectedSeq\`), and \`saveExtra\` at a \`turn_end\` only when \`extra\` differs
  from what the store holds (the Agent passes \`storedExtra\`): \`extra\` changes once per turn here, so once.
  **batch**: one append of the four messages and one \`saveExtra\`.
- **wchar**: bytes this process passed to \`write()\` (\`/proc/self/io\`); for PostgreSQL that is what the client sent
  over the socket. **store growth**: SQLite, growth of the database file plus its WAL (emptied by a checkpoint after
  seeding, so it counts the WAL frames the turns append: whole 4 KiB pages); PostgreSQL, WAL bytes the server
  generated (\`pg_current_wal_insert_lsn\`, after a \`CHECKPOINT\`; the whole server's, so other clients add noise). **logical**: the canonical JSON of the four new
  messages. **load ms**: \`load()\` of the whole thread (H + ${4 * (TURNS + 1)} messages).
- \`sqlite (full)\` is the default (\`synchronous = FULL\`: an fsync per commit); \`sqlite (normal)\` skips it.
- Time is wall time on a shared 2-core machine: it moves by 2× between runs; bytes do not move at all. With
  PostgreSQL's \`synchronous_commit = on\`, each statement waits for a WAL flush, which dominates its time.
- \`load\` reads the whole thread, so its time grows with H by nature; the flatness promise is about writes.

${table(results)}

**Fork** (\`checkpointer.fork\`, issue 22): a thread seeded to H messages, then 1 warm-up and ${FORKS} forks of it at
atSeq = H − 4 (an "edit and resend" of the last prompt), taken round-robin across the H values and each measured
alone; medians per fork. Rows written are counted in the store's tables around each fork. **load ms (fork)** is
\`load()\` of a fork (H − 4 messages read through its parent), which grows with H like any load.

${forkTable(forkResults)}

For scale, the peer baseline (\`../shared/bench-peers/baseline-results\`): LangGraph's SqliteSaver writes 284 KB per
turn at H = 100, 1.67 MB at H = 1,000 and 16.9 MB at H = 5,000 (wchar), its time per turn growing from 56 ms to
1,081 ms; a harness-written JSONL append (pi) writes 1.1 KB.
`;
}

const runs = {
  sqlite: (sizes, turns) => runSQLite('full', sizes, turns),
  'sqlite-normal': (sizes, turns) => runSQLite('normal', sizes, turns),
  postgres: (sizes, turns) => onPostgres((admin) => runBackend('postgres', postgresStore(admin), sizes, turns)),
};
// The fork row: SQLite as configured by default (synchronous = full) and PostgreSQL.
const forkRuns = {
  sqlite: (sizes, forks) => runForks('sqlite (full)', sqliteStore('full'), sizes, forks),
  postgres: (sizes, forks) => onPostgres((admin) => runForks('postgres', postgresStore(admin), sizes, forks)),
};
const results = [];
const forkResults = [];
for (const backend of BACKENDS) {
  const run = runs[backend];
  if (run === undefined) throw new Error(`unknown backend ${backend}`);
  await run([SIZES[0]], 5); // warm-up pass, discarded: JIT, connections, plan caches
  results.push(...(await run(SIZES, TURNS)));
  const forks = forkRuns[backend];
  if (forks !== undefined) {
    await forks([FORK_SIZES[0]], 3); // warm-up, discarded
    forkResults.push(...(await forks(FORK_SIZES, FORKS)));
  }
  console.error(`${backend}: done`);
}
const text = section(results, forkResults);
console.log(text);
if (WRITE) {
  writeResultsSection(RESULTS, HEADING, text);
  console.error(`written to ${RESULTS}`);
}
