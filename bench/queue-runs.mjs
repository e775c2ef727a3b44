// cubepi/worker end to end (issue 23): runs queued on PostgreSQL (createRunQueue, pg-boss) and taken by worker
// processes (startWorker), against the same runs on an in-process Agent. One run of this script measures:
//
//   pickup      enqueue → the run's first event (agent_start) stored in the log (`appended_at`, the append
//               statement's start), and enqueue → the first event seen by a reader (`queue.events(runId)`, subscribed
//               as soon as enqueue resolved); 1 idle worker process, one run at a time (the next enqueued 20–60 ms
//               after the previous one ended), 10 warm-up runs not counted; then PAIRS follow-ups: two runs of one
//               thread enqueued back to back, the second's agent_start stored → measured from the first's ended_at.
//   throughput  RUNS runs over THREADS threads (run k: thread k mod THREADS, its prompt number k div THREADS),
//               enqueued all at once (4 enqueuers, each owning a quarter of the threads, so every thread's prompts are
//               enqueued in order) → all ended; for 1, 2 and 4 worker processes (each `concurrency` C), and the
//               in-process baseline: one process running the same runs C at a time (a thread's runs one at a time, in
//               order), each on a new Agent with the same PostgresCheckpointer and the same scripted model, restored
//               before its run as a worker does — no queue, no runs table, no run-event log. No readers.
//   writes      per run, over the throughput window (until every process of the configuration has stopped: exiting backends flush their statistics): statements
//               the processes sent (pg.Client#query calls, counted in every process), transactions and rows
//               inserted / updated / deleted (pg_stat_database of a database of the bench's own), rows per table
//               (pg_stat_user_tables: pg-boss's job table, the runs table, the run-event log, the checkpoints), and
//               WAL bytes: pg_current_wal_lsn() before/after (the whole cluster: other databases' writes included)
//               and, with pg_walinspect, only the WAL records of this database's relations and their commits.
//   cpu         CPU seconds of each Node process (process.cpuUsage) and of the PostgreSQL backends connected to the
//               bench's database (/proc/<pid>/stat), over the throughput window; the host's busy fraction.
//
// The model (FauxProvider, no delay): a `note` tool call with the prompt's text, then a ~25-word answer streamed in
// 4-character chunks. The tool does nothing but return text. Correctness is checked inside: every run ended
// `completed`, and every thread's transcript is its prompts in order, each as user / tool call / result / answer.
//
// The whole bench runs in a database created for it (`qbench_<random>`, dropped at the end; fresh schemas per
// measurement in it): pg_stat_database counts per database, and `test` is shared with the test suites of other
// sessions. `--database NAME` uses an existing database instead (its statistics then include whatever else runs).
//
//   node queue-runs.mjs [--reps 3] [--runs 400] [--threads 100] [--concurrency 4] [--pickup 200] [--workers 1,2,4]
//                       [--pairs 20] [--poll SECONDS (the workers' pollSeconds)] [--no-write] [--database NAME]
//
// cubepi is loaded as the `cubepi` package (bench/node_modules/cubepi → ..: npm run build at the root first); pg is
// the copy cubepi and pg-boss load, so one patch of pg.Client#query counts every statement.
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import { lastValueFrom, tap, toArray } from 'rxjs';
import { Agent, defineTool } from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { PostgresCheckpointer } from 'cubepi/checkpoint/postgres';
import { createRunQueue, startWorker } from 'cubepi/worker';
import { median, pgConfig, sleep, writeResultsSection } from './common.mjs';

const cubepiRequire = createRequire(fileURLToPath(import.meta.resolve('cubepi')));
const pg = cubepiRequire('pg');
const zodManifest = cubepiRequire.resolve('zod/package.json');
const { z } = await import(
  pathToFileURL(
    path.join(path.dirname(zodManifest), JSON.parse(fs.readFileSync(zodManifest, 'utf8')).exports['.'].import),
  ).href
);

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const ROLE = arg('role', 'main');

// --- statements: every query a process sends ---------------------------------------------------------------------
let statements = 0;
let monitorStatements = 0;
const originalQuery = pg.Client.prototype.query;
pg.Client.prototype.query = function countedQuery(...args) {
  if (this.uncounted) monitorStatements++;
  else statements++;
  return originalQuery.apply(this, args);
};
const wallNow = () => performance.timeOrigin + performance.now();

// --- the agents: the same in the worker processes and the in-process baseline ------------------------------------
const ANSWER =
  'Noted. The note is stored with the thread, and the next prompt of this thread will see it in the history above.';
function textOf(message) {
  return typeof message.content === 'string'
    ? message.content
    : message.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}
function lastPrompt(messages) {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i].role === 'user') return textOf(messages[i]);
  return '';
}
function agentFactory(pool, schema) {
  const checkpointer = new PostgresCheckpointer(pool, { schema });
  const note = defineTool({
    name: 'note',
    description: 'Notes a text',
    parameters: z.object({ text: z.string() }),
    execute: async (_id, { text }) => `noted ${text}`,
  });
  const respond = (messages) =>
    messages.at(-1)?.role === 'toolResult'
      ? fauxMessage(`done ${lastPrompt(messages)}. ${ANSWER}`)
      : fauxMessage([fauxToolCall('note', { text: lastPrompt(messages) })]);
  return (threadId) =>
    new Agent({
      provider: new FauxProvider({ chunkSize: 4, responses: [respond, respond, respond] }),
      model: 'faux',
      tools: [note],
      checkpointer,
      threadId,
    });
}

function makePool(max) {
  const pool = new pg.Pool({ ...pgConfig(), database: process.env.QBENCH_DB, max });
  pool.on('error', () => {});
  return pool;
}

// --- child roles -------------------------------------------------------------------------------------------------
if (ROLE === 'worker') {
  const schema = arg('schema');
  const pool = makePool(8);
  const queue = createRunQueue({ pool, schema, bossSchema: `${schema}_boss` });
  const worker = await startWorker({
    queue,
    concurrency: Number(arg('concurrency')),
    ...(arg('poll') ? { pollSeconds: Number(arg('poll')) } : {}),
    agents: { bench: agentFactory(pool, schema) },
    onError: () => {},
  });
  process.on('message', async (message) => {
    if (message.type === 'cpu') process.send({ type: 'cpu', cpu: process.cpuUsage(), statements });
    if (message.type === 'stop') {
      await worker.stop({ graceMs: 1000 });
      await queue.close();
      await pool.end();
      process.send({ type: 'stopped', statements }, () => process.exit(0));
    }
  });
  process.send({ type: 'ready' });
} else if (ROLE === 'inproc') {
  const schema = arg('schema');
  const concurrency = Number(arg('concurrency'));
  const pool = makePool(8);
  const make = agentFactory(pool, schema);
  /** Runs `runs` ([{threadId, input}], in enqueue order) `concurrency` at a time, a thread's runs in order. */
  const runAll = async (runs) => {
    const outcomes = [];
    const busy = new Set();
    const waiting = [...runs];
    let running = 0;
    let finish;
    const done = new Promise((resolve) => (finish = resolve));
    const startNext = () => {
      while (running < concurrency) {
        const index = waiting.findIndex((run) => !busy.has(run.threadId));
        if (index < 0) break;
        const [run] = waiting.splice(index, 1);
        busy.add(run.threadId);
        running++;
        (async () => {
          const agent = make(run.threadId);
          try {
            await agent.restore();
            const events = await lastValueFrom(agent.prompt$(run.input).pipe(toArray()));
            outcomes.push(events.at(-1)?.type === 'agent_end' ? events.at(-1).outcome : 'no agent_end');
          } catch (error) {
            outcomes.push(`error: ${error.message}`);
          } finally {
            await agent.dispose().catch(() => {});
            busy.delete(run.threadId);
            running--;
            if (waiting.length === 0 && running === 0) finish();
            else startNext();
          }
        })();
      }
    };
    if (runs.length === 0) return outcomes;
    startNext();
    await done;
    return outcomes;
  };
  process.on('message', async (message) => {
    if (message.type === 'cpu') process.send({ type: 'cpu', cpu: process.cpuUsage(), statements });
    if (message.type === 'go') {
      const t0 = wallNow();
      const outcomes = await runAll(message.runs);
      process.send({ type: 'done', t0, t1: wallNow(), outcomes });
    }
    if (message.type === 'stop') {
      await pool.end();
      process.send({ type: 'stopped', statements }, () => process.exit(0));
    }
  });
  process.send({ type: 'ready' });
}
if (ROLE !== 'main') await new Promise(() => {});

// --- main --------------------------------------------------------------------------------------------------------
const REPS = Number(arg('reps', 3));
const RUNS = Number(arg('runs', 400));
const THREADS = Number(arg('threads', 100));
const CONCURRENCY = Number(arg('concurrency', 4));
const PICKUP = Number(arg('pickup', 200));
const WORKERS = String(arg('workers', '1,2,4')).split(',').map(Number);
const WARMUP = 10;
// A backend that flushed its statistics less than 1 s ago keeps the next ones pending until it has been idle 10 s
// (PostgreSQL 15's PGSTAT_MIN_INTERVAL / PGSTAT_IDLE_INTERVAL): both snapshots wait that out.
const SETTLE_MS = 11_000;
const PAIRS = Number(arg('pairs', 20));
const POLL = arg('poll');

const adminConfig = pgConfig();
let database = arg('database');
const ownDatabase = database === undefined;
if (ownDatabase) {
  database = `qbench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client(adminConfig);
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  await admin.end();
}
process.env.QBENCH_DB = database;
const monitor = makePool(3);
monitor.on('connect', (client) => (client.uncounted = true));
let walinspect = false;
try {
  await monitor.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
  walinspect = true;
} catch (error) {
  console.error('pg_walinspect unavailable:', error.message);
}
const hasStatStatements =
  (
    await monitor.query(
      `SELECT 1 FROM pg_settings WHERE name = 'shared_preload_libraries' AND setting LIKE '%pg_stat_statements%'`,
    )
  ).rowCount === 1;
const { rows: oidRows } = await monitor.query('SELECT oid FROM pg_database WHERE datname = current_database()');
const dbOid = oidRows[0].oid;
const serverVersion = (await monitor.query('SHOW server_version')).rows[0].server_version;

const schemas = [];
const freshSchema = (label) => {
  const schema = `qb_${label}_${randomBytes(3).toString('hex')}`;
  schemas.push(schema, `${schema}_boss`);
  return schema;
};

function spawnChild(role, schema) {
  const args = ['--role', role, '--schema', schema, '--concurrency', `${CONCURRENCY}`];
  if (POLL) args.push('--poll', POLL);
  const child = fork(fileURLToPath(import.meta.url), args, {
    env: { ...process.env, QBENCH_DB: database },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ready = new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${role} exited ${code}`)));
    const onMessage = (message) => {
      if (message.type === 'ready') {
        child.off('message', onMessage);
        resolve();
      }
    };
    child.on('message', onMessage);
  });
  const ask = (type, extra = {}, reply = type) =>
    new Promise((resolve) => {
      const onMessage = (message) => {
        if (message.type === reply) {
          child.off('message', onMessage);
          resolve(message);
        }
      };
      child.on('message', onMessage);
      child.send({ type, ...extra });
    });
  /** Stops the child; resolves with the statements it had sent when it stopped (NaN if it had to be killed). */
  const stop = async () => {
    if (child.exitCode !== null) return NaN;
    let sent = NaN;
    child.on('message', (message) => message.type === 'stopped' && (sent = message.statements));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.send({ type: 'stop' });
    await Promise.race([exited, sleep(10_000).then(() => child.kill('SIGKILL'))]);
    return sent;
  };
  return { child, ready, ask, stop };
}

// CPU of the PostgreSQL backends of this database (utime + stime, seconds) and of the whole host.
const TICK = 100; // USER_HZ
async function backendCpu() {
  const { rows } = await monitor.query('SELECT pid FROM pg_stat_activity WHERE datname = current_database()');
  const out = new Map();
  for (const { pid } of rows) {
    try {
      const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      out.set(pid, (Number(fields[11]) + Number(fields[12])) / TICK);
    } catch {
      // gone
    }
  }
  return out;
}
const cpuDelta = (before, after) => {
  let sum = 0;
  for (const [pid, t] of after) sum += t - (before.get(pid) ?? 0);
  return sum;
};
function hostCpu() {
  const [, ...v] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  const idle = v[3] + v[4];
  const total = v.reduce((a, b) => a + b, 0);
  return { idle, total };
}

async function statsSnapshot(schema) {
  const db = (
    await monitor.query(
      `SELECT xact_commit::float8 AS xacts, xact_rollback::float8 AS rollbacks, tup_inserted::float8 AS ins,
         tup_updated::float8 AS upd, tup_deleted::float8 AS del, pg_current_wal_lsn() AS lsn
       FROM pg_stat_database WHERE datname = current_database()`,
    )
  ).rows[0];
  const tables = (
    await monitor.query(
      `SELECT schemaname || '.' || relname AS name, n_tup_ins::float8 AS ins, n_tup_upd::float8 AS upd,
         n_tup_del::float8 AS del FROM pg_stat_user_tables WHERE schemaname IN ($1, $2)`,
      [schema, `${schema}_boss`],
    )
  ).rows;
  return { ...db, tables };
}
function tableKind(name) {
  const table = name.split('.')[1];
  if (name.split('.')[0].endsWith('_boss'))
    return table === 'job' || /^j[0-9a-f]{20,}/.test(table) ? 'pg-boss jobs' : `pg-boss ${table}`;
  if (table === 'cubepi_run_events') return 'run-event log';
  if (table === 'cubepi_run_events_v3') return 'run-event log (batches)';
  if (table === 'cubepi_runs') return 'runs table';
  return `checkpoints (${table})`;
}
async function walOf(before, after) {
  const cluster = Number(
    (await monitor.query('SELECT pg_wal_lsn_diff($2, $1)::float8 AS d', [before, after])).rows[0].d,
  );
  if (!walinspect) return { cluster, mine: NaN };
  if (cluster === 0) return { cluster, mine: 0 }; // pg_walinspect refuses a start at the flush position
  try {
    const like = `%rel %/${dbOid}/%`;
    const { rows } = await monitor.query(
      `WITH r AS (SELECT xid::text AS xid, resource_manager, record_length, block_ref
                  FROM pg_get_wal_records_info($1, $2)),
            mine AS (SELECT DISTINCT xid FROM r WHERE block_ref LIKE $3 AND xid <> '0')
       SELECT coalesce(sum(record_length) FILTER (WHERE block_ref LIKE $3
                OR (resource_manager = 'Transaction' AND xid IN (SELECT xid FROM mine))), 0)::float8 AS mine
       FROM r`,
      [before, after, like],
    );
    // Per relation (a record counted once, for its first block; idle background not subtracted): where the WAL goes.
    const byRelation = await monitor.query(
      `SELECT coalesce(pg_filenode_relation(0, n::oid)::text, 'other ' || n) AS rel, sum(record_length)::float8 AS bytes
       FROM (SELECT substring(block_ref from 'rel [0-9]+/[0-9]+/([0-9]+)') AS n, record_length
             FROM pg_get_wal_records_info($1, $2) WHERE block_ref LIKE $3) r
       GROUP BY 1 ORDER BY 2 DESC LIMIT 12`,
      [before, after, like],
    );
    return { cluster, mine: rows[0].mine, byRelation: byRelation.rows };
  } catch (error) {
    console.error('pg_walinspect:', error.message);
    return { cluster, mine: NaN };
  }
}

/** The expected transcript of thread t after `perThread` runs, and the check of every thread. */
async function checkTranscripts(schema, threads) {
  const checkpointer = new PostgresCheckpointer(monitor, { schema });
  let bad = 0;
  const problems = [];
  for (const [threadId, prompts] of threads) {
    const data = await checkpointer.load(threadId);
    const got = (data?.messages ?? []).map((m) =>
      m.role === 'assistant'
        ? m.content.some((c) => c.type === 'toolCall')
          ? `call:${m.content.find((c) => c.type === 'toolCall').arguments.text}`
          : `answer:${textOf(m)}`
        : `${m.role}:${textOf(m)}`,
    );
    const want = prompts.flatMap((p) => [
      `user:${p}`,
      `call:${p}`,
      `toolResult:noted ${p}`,
      `answer:done ${p}. ${ANSWER}`,
    ]);
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      bad++;
      if (problems.length < 3) problems.push({ threadId, got: got.slice(0, 8), want: want.slice(0, 8) });
    }
  }
  await checkpointer.close(); // removes its listener from the shared pool
  if (bad > 0) console.error('transcript problems', JSON.stringify(problems));
  return bad;
}

const runPlan = (prefix, runs, threads) =>
  Array.from({ length: runs }, (_, k) => ({
    threadId: `${prefix}${k % threads}`,
    input: `${prefix}${k % threads}-p${Math.floor(k / threads)}`,
  }));
const threadsOf = (plan) => {
  const threads = new Map();
  for (const run of plan) {
    if (!threads.has(run.threadId)) threads.set(run.threadId, []);
    threads.get(run.threadId).push(run.input);
  }
  return threads;
};

/** Enqueues `plan` with 4 enqueuers, each owning the threads i mod 4 (a thread's runs enqueued in order). */
async function enqueueAll(queue, plan) {
  const lanes = [0, 1, 2, 3].map((lane) => plan.filter((_, k) => (k % THREADS) % 4 === lane));
  const ids = [];
  await Promise.all(
    lanes.map(async (lane) => {
      for (const run of lane)
        ids.push(await queue.enqueue({ threadId: run.threadId, agent: 'bench', input: run.input }));
    }),
  );
  return ids;
}
async function waitEnded(schema, count) {
  for (;;) {
    const { rows } = await monitor.query(
      `SELECT count(*)::int AS n FROM "${schema}".cubepi_runs WHERE status = 'ended'`,
    );
    if (rows[0].n >= count) return;
    await sleep(100);
  }
}

// --- pickup ----------------------------------------------------------------------------------------------------
async function pickup() {
  const schema = freshSchema('pick');
  const pool = makePool(12);
  const queue = createRunQueue({ pool, schema, bossSchema: `${schema}_boss` });
  await queue.start();
  const worker = spawnChild('worker', schema);
  await worker.ready;
  const stored = [];
  const seen = [];
  const enqueueMs = [];
  let failed = 0;
  try {
    for (let i = 0; i < WARMUP + PICKUP; i++) {
      await sleep(20 + Math.random() * 40);
      const t0 = wallNow();
      const runId = await queue.enqueue({
        threadId: `p${i % 20}`,
        agent: 'bench',
        input: `p${i % 20}-p${Math.floor(i / 20)}`,
      });
      const t1 = wallNow();
      let first;
      const events = await lastValueFrom(
        queue.events(runId).pipe(
          tap(() => (first ??= wallNow())),
          toArray(),
        ),
      );
      if (events[0]?.type !== 'agent_start' || events.at(-1)?.outcome !== 'completed') failed++;
      const { rows } = await monitor.query(
        `SELECT extract(epoch FROM appended_at)::float8 * 1000 AS at FROM "${schema}".cubepi_run_events_v3 WHERE run_id = $1 AND first_seq = 1`,
        [runId],
      );
      if (i < WARMUP) continue;
      enqueueMs.push(t1 - t0);
      stored.push(rows[0].at - t0);
      seen.push(first - t0);
    }
    // A thread's next run enqueued while its previous one runs: previous ended → next's agent_start stored.
    const followUp = [];
    for (let i = 0; i < PAIRS; i++) {
      await sleep(20 + Math.random() * 40);
      const threadId = `f${i}`;
      const first = await queue.enqueue({ threadId, agent: 'bench', input: `f${i}-p0` });
      const second = await queue.enqueue({ threadId, agent: 'bench', input: `f${i}-p1` });
      for (const id of [first, second]) {
        const events = await lastValueFrom(queue.events(id).pipe(toArray()));
        if (events.at(-1)?.outcome !== 'completed') failed++;
      }
      const { rows } = await monitor.query(
        `SELECT (extract(epoch FROM (SELECT appended_at FROM "${schema}".cubepi_run_events_v3 WHERE run_id = $2 AND first_seq = 1))
                - extract(epoch FROM (SELECT ended_at FROM "${schema}".cubepi_runs WHERE run_id = $1)))::float8 * 1000 AS gap`,
        [first, second],
      );
      followUp.push(rows[0].gap);
    }
    const threads = threadsOf([
      ...runPlan('p', WARMUP + PICKUP, 20),
      ...Array.from({ length: PAIRS }, (_, i) =>
        [0, 1].map((n) => ({ threadId: `f${i}`, input: `f${i}-p${n}` })),
      ).flat(),
    ]);
    const badThreads = await checkTranscripts(schema, threads);
    return { stored, seen, enqueueMs, followUp, failed, badThreads };
  } finally {
    await worker.stop();
    await queue.close();
    await pool.end();
  }
}

// --- throughput + writes + cpu -------------------------------------------------------------------------------------
/** The counters a window is measured by: PostgreSQL's, and the statements every process sent. */
async function counters(schema, children) {
  const snapshot = await statsSnapshot(schema);
  const replies = await Promise.all(children.map((c) => c.ask('cpu')));
  return {
    ...snapshot,
    statements: replies.reduce((sum, r) => sum + r.statements, 0) + statements,
    monitor: monitorStatements,
    at: wallNow(),
  };
}
const FIELDS = ['statements', 'xacts', 'ins', 'upd', 'del'];
function deltaOf(before, after) {
  const d = { seconds: (after.at - before.at) / 1000 };
  for (const f of FIELDS) d[f] = after[f] - before[f];
  // The bench's own statistics queries are transactions of this database too.
  d.xacts -= after.monitor - before.monitor;
  return d;
}

/** One throughput measurement. `config`: { workers: 0 (in-process) | N worker processes }. */
async function throughput(config) {
  const { workers } = config;
  const schema = freshSchema(workers === 0 ? 'inproc' : `q${workers}`);
  const warm = runPlan('w', WARMUP * Math.max(1, workers), 10);
  const plan = runPlan('t', RUNS, THREADS);
  let children = [];
  let queue;
  let pool;
  const result = { config: labelOf(config) };
  try {
    if (workers === 0) {
      const child = spawnChild('inproc', schema);
      children = [child];
      await child.ready;
      await child.ask('go', { runs: warm }, 'done');
    } else {
      pool = makePool(8);
      queue = createRunQueue({ pool, schema, bossSchema: `${schema}_boss` });
      await queue.start();
      children = Array.from({ length: workers }, () => spawnChild('worker', schema));
      await Promise.all(children.map((c) => c.ready));
      await enqueueAll(queue, warm);
      await waitEnded(schema, warm.length);
    }
    // Idle background (pg-boss's polling and supervision): measured over one settle period, subtracted below.
    await sleep(SETTLE_MS);
    const idleStart = await counters(schema, children);
    await sleep(SETTLE_MS);
    const before = await counters(schema, children);
    const idle = deltaOf(idleStart, before);
    const idleWal = await walOf(idleStart.lsn, before.lsn);
    const cpuBefore = await Promise.all(children.map((c) => c.ask('cpu')));
    const mainCpuBefore = process.cpuUsage();
    const pgBefore = await backendCpu();
    const hostBefore = hostCpu();
    let t0;
    let t1;
    let enqueueSeconds = 0;
    if (workers === 0) {
      const done = await children[0].ask('go', { runs: plan }, 'done');
      t0 = done.t0;
      t1 = done.t1;
      result.completed = done.outcomes.filter((o) => o === 'completed').length;
    } else {
      t0 = wallNow();
      await enqueueAll(queue, plan);
      enqueueSeconds = (wallNow() - t0) / 1000;
      await waitEnded(schema, warm.length + plan.length);
      const { rows } = await monitor.query(
        `SELECT extract(epoch FROM max(ended_at))::float8 * 1000 AS last,
           count(*) FILTER (WHERE outcome = 'completed' AND attempts = 1)::int AS completed
         FROM "${schema}".cubepi_runs WHERE thread_id LIKE 't%'`,
      );
      t1 = rows[0].last;
      result.completed = rows[0].completed;
    }
    // CPU at the end of the window.
    const pgAfter = await backendCpu();
    const hostAfter = hostCpu();
    const mainCpu = process.cpuUsage(mainCpuBefore);
    const cpuAfter = await Promise.all(children.map((c) => c.ask('cpu')));
    const wall = (t1 - t0) / 1000;
    // Every process of the configuration stops, so every backend exits and flushes its statistics (a LISTENing
    // backend reads each NOTIFY of the database in a transaction of its own, and holds those counts until its next
    // query or its exit).
    const stopAt = wallNow();
    const sent = await Promise.all(children.map((c) => c.stop()));
    children = [];
    await queue?.close();
    await pool?.end();
    queue = pool = undefined;
    await sleep(1500);
    const after = { ...(await statsSnapshot(schema)), monitor: monitorStatements, at: stopAt };
    after.statements = sent.reduce((a, b) => a + b, 0) + statements;
    const window = deltaOf(before, after);
    const wal = await walOf(before.lsn, after.lsn);
    const childCpu = cpuAfter.map(
      (a, i) => (a.cpu.user + a.cpu.system - cpuBefore[i].cpu.user - cpuBefore[i].cpu.system) / 1e6,
    );
    const tables = {};
    for (const t of after.tables) {
      const b = before.tables.find((x) => x.name === t.name) ?? { ins: 0, upd: 0, del: 0 };
      const kind = tableKind(t.name);
      tables[kind] ??= { ins: 0, upd: 0, del: 0 };
      tables[kind].ins += (t.ins - b.ins) / RUNS;
      tables[kind].upd += (t.upd - b.upd) / RUNS;
      tables[kind].del += (t.del - b.del) / RUNS;
    }
    // Per run: the window's counts minus the idle background's rate over the window's length.
    const perRun = (f) => (window[f] - (idle[f] / idle.seconds) * window.seconds) / RUNS;
    Object.assign(result, {
      wall,
      runsPerSecond: RUNS / wall,
      enqueueSeconds,
      badThreads: await checkTranscripts(schema, threadsOf(plan)),
      raw: Object.fromEntries(FIELDS.map((f) => [f, window[f] / RUNS])),
      idlePerSecond: Object.fromEntries(FIELDS.map((f) => [f, idle[f] / idle.seconds])),
      ...Object.fromEntries(FIELDS.map((f) => [f, perRun(f)])),
      walCluster: wal.cluster / RUNS,
      walMineRaw: wal.mine / RUNS,
      walMine: (wal.mine - (idleWal.mine / idle.seconds) * window.seconds) / RUNS,
      walByRelation: Object.fromEntries((wal.byRelation ?? []).map((r) => [r.rel, Math.round(r.bytes / RUNS)])),
      tables,
      childCpu,
      mainCpu: (mainCpu.user + mainCpu.system) / 1e6,
      pgCpu: cpuDelta(pgBefore, pgAfter),
      hostBusy: 1 - (hostAfter.idle - hostBefore.idle) / (hostAfter.total - hostBefore.total),
      load: os.loadavg()[0],
    });
    return result;
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await queue?.close();
    await pool?.end();
  }
}

function labelOf({ workers }) {
  if (workers === 0) return 'in-process';
  return `queue, ${workers} worker${workers > 1 ? 's' : ''}`;
}
const label = labelOf;
const round = (_, v) => (typeof v === 'number' ? Math.round(v * 1000) / 1000 : v);
const uptimes = [
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' '),
];
console.log(`database ${database}, PostgreSQL ${serverVersion}, Node ${process.version}, load ${uptimes[0]}`);

const pickups = [];
const configs = [
  { workers: 0 },
  ...WORKERS.map((workers) => ({ workers })),
];
const measured = new Map(configs.map((c) => [c, []]));
try {
  for (let rep = 0; rep < REPS; rep++) {
    const p = await pickup();
    pickups.push(p);
    console.log(
      `pickup rep ${rep + 1}: stored p50 ${median(p.stored).toFixed(2)} ms, seen p50 ${median(p.seen).toFixed(2)} ms, failed ${p.failed}, bad threads ${p.badThreads}`,
    );
    const order = rep % 2 === 0 ? configs : [...configs].reverse();
    for (const config of order) {
      const r = await throughput(config);
      measured.get(config).push(r);
      console.log(label(config), JSON.stringify(r, round));
    }
    uptimes.push(
      os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' '),
    );
  }
} finally {
  await monitor.end();
  const admin = new pg.Client(adminConfig);
  await admin.connect();
  if (ownDatabase) await admin.query(`DROP DATABASE ${database} WITH (FORCE)`);
  else {
    await admin.end();
    const cleanup = new pg.Client({ ...adminConfig, database });
    await cleanup.connect();
    for (const schema of schemas) await cleanup.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await cleanup.end();
  }
  if (ownDatabase) await admin.end();
}

// --- report -------------------------------------------------------------------------------------------------------
const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: quantile(s, 0.5), p95: quantile(s, 0.95), p99: quantile(s, 0.99), max: s.at(-1) };
};
const spread = (xs, digits = 2) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length > 1
    ? `${median(s).toFixed(digits)} (${s[0].toFixed(digits)}–${s.at(-1).toFixed(digits)})`
    : median(s).toFixed(digits);
};
const pooled = (key) => stats(pickups.flatMap((p) => p[key]));
const perRep = (key, q) => pickups.map((p) => stats(p[key])[q]);
const pickupRows = [
  ['enqueue call', 'enqueueMs'],
  ['enqueue → agent_start stored', 'stored'],
  ['enqueue → first event at a reader', 'seen'],
  ["a thread's next run, enqueued while the previous one ran: previous `ended_at` → agent_start stored", 'followUp'],
].map(([name, key]) => {
  const all = pooled(key);
  return `| ${name} | ${all.p50.toFixed(2)} | ${all.p95.toFixed(2)} | ${all.p99.toFixed(2)} | ${all.max.toFixed(2)} | ${perRep(
    key,
    'p50',
  )
    .map((v) => v.toFixed(2))
    .join(' / ')} | ${perRep(key, 'p99')
    .map((v) => v.toFixed(2))
    .join(' / ')} |`;
});
const base = median(measured.get(configs[0]).map((r) => r.runsPerSecond));
const med = (config, f) => median(measured.get(config).map(f));
const throughputRows = configs.map((config) => {
  const rs = measured.get(config);
  const ratio = config.workers === 0 ? '1' : spread(rs.map((r) => r.runsPerSecond / base));
  const workerCpu = rs.map((r) => r.childCpu.reduce((a, b) => a + b, 0) / r.wall);
  return `| ${label(config)} | ${spread(
    rs.map((r) => r.runsPerSecond),
    0,
  )} | ${ratio} | ${spread(rs.map((r) => r.wall))} | ${config.workers === 0 ? '–' : spread(rs.map((r) => r.enqueueSeconds))} | ${spread(workerCpu)} | ${spread(rs.map((r) => r.pgCpu / r.wall))} | ${spread(rs.map((r) => r.mainCpu / r.wall))} | ${spread(
    rs.map((r) => r.hostBusy * 100),
    0,
  )} | ${spread(rs.map((r) => (r.childCpu.reduce((a, b) => a + b, 0) * 1000) / RUNS))} | ${spread(rs.map((r) => (r.pgCpu * 1000) / RUNS))} |`;
});
const writeRows = configs.map(
  (config) =>
    `| ${label(config)} | ${med(config, (r) => r.statements).toFixed(1)} | ${med(config, (r) => r.xacts).toFixed(1)} | ${med(config, (r) => r.ins).toFixed(1)} | ${med(config, (r) => r.upd).toFixed(1)} | ${med(config, (r) => r.del).toFixed(1)} | ${(med(config, (r) => r.walMine) / 1024).toFixed(1)} | ${(med(config, (r) => r.walCluster) / 1024).toFixed(1)} | ${med(config, (r) => r.raw.xacts).toFixed(1)} | ${med(config, (r) => r.idlePerSecond.xacts).toFixed(1)} |`,
);
const kinds = [...new Set(configs.flatMap((c) => measured.get(c).flatMap((r) => Object.keys(r.tables))))].sort();
const tableRows = kinds.map(
  (kind) =>
    `| ${kind} | ${configs
      .map((config) => {
        const v = (f) => median(measured.get(config).map((r) => r.tables[kind]?.[f] ?? 0));
        return `${v('ins').toFixed(1)} / ${v('upd').toFixed(1)} / ${v('del').toFixed(1)}`;
      })
      .join(' | ')} |`,
);
const failures = {
  pickupFailed: pickups.reduce((s, p) => s + p.failed, 0),
  pickupBadThreads: pickups.reduce((s, p) => s + p.badThreads, 0),
  notCompleted: configs.flatMap((c) => measured.get(c).map((r) => RUNS - r.completed)).reduce((a, b) => a + b, 0),
  badThreads: configs.flatMap((c) => measured.get(c).map((r) => r.badThreads)).reduce((a, b) => a + b, 0),
};
const bossVersion = JSON.parse(fs.readFileSync(cubepiRequire.resolve('pg-boss/package.json'), 'utf8')).version;
const text = `## Run queue: pickup, throughput, writes per run (queue-runs.mjs)

cubepi/worker (\`createRunQueue\` + \`startWorker\`, pg-boss ${bossVersion}, which declares Node ≥ 22; run here on Node
${process.version}), PostgreSQL ${serverVersion} on this host, ${os.cpus().length} cores shared with other sessions,
${new Date().toISOString().slice(0, 10)}. ${REPS} repetitions, configurations alternating in order (in-process first on
odd repetitions, last on even ones); medians, with (min–max) over the repetitions. Load average (1 min) before and
after each repetition: ${uptimes.join(' → ')}. Model: FauxProvider without delay, a \`note\` tool call then a ~25-word
answer in 4-character chunks; the tool only returns text. Every run ended \`completed\` on its first attempt and every
thread's transcript was its prompts in order (checked: ${failures.notCompleted} runs not completed,
${failures.badThreads + failures.pickupBadThreads} bad transcripts, ${failures.pickupFailed} bad pickup streams).

**Pickup** (1 idle worker process, concurrency ${CONCURRENCY}, one run at a time, the next enqueued 20–60 ms after the
previous ended; ${PICKUP} runs per repetition after ${WARMUP} warm-up runs; pooled over the repetitions, then p50 and
p99 per repetition). "Stored" is the \`appended_at\` (\`now()\` of the append statement) of the run's first frame;
"at a reader" is when \`queue.events(runId)\`, subscribed as soon as \`enqueue\` resolved, emitted \`agent_start\`.
The last row: ${PAIRS} pairs per repetition, two runs of one thread enqueued back to back (PostgreSQL clock only).

| ms from the enqueue call | p50 | p95 | p99 | max | p50 per rep | p99 per rep |
|---|---:|---:|---:|---:|---:|---:|
${pickupRows.join('\n')}

**Throughput** (${RUNS} runs over ${THREADS} threads, ${RUNS / THREADS} per thread, enqueued all at once by 4 enqueuers
in the bench process; the time from the first enqueue call to the last run's \`ended_at\`; each worker process
\`concurrency\` ${CONCURRENCY}; the in-process baseline runs the same runs ${CONCURRENCY} at a time in one process, a new
Agent per run restored from the same PostgresCheckpointer, no queue, no log). CPU columns: CPU seconds per wall second
(1 = one core busy) of the worker processes together (or the in-process one), of the PostgreSQL backends of the bench's
database, and of the enqueuing bench process; "host busy" is the whole machine (other sessions included).

| path | runs/s | × in-process | wall s | enqueue s | workers CPU | PG backends CPU | enqueuer CPU | host busy % | worker CPU ms/run | PG CPU ms/run |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${throughputRows.join('\n')}

**PostgreSQL work per run** (medians over the repetitions). Window: from the start of the throughput measurement until every process of the
configuration has stopped and its connections closed (a backend flushes its statistics when it exits; a LISTENing
backend holds back the transactions in which it reads NOTIFYs until then). Minus the idle background: every counter is also measured over ${SETTLE_MS / 1000} s with the
same processes idle just before (pg-boss's fetch polls, every 1 s per fetch loop, and its supervision in every
process), and that rate × the window's length is subtracted ("raw" columns: not subtracted). ${
  hasStatStatements
    ? 'pg_stat_statements is loaded but not used here'
    : 'pg_stat_statements is not loaded on this server'
}, so statements are counted in the clients: every \`pg.Client#query\` call of the workers and the enqueuer, BEGIN and
COMMIT included (a multi-statement text is one). Transactions (read-only ones included) and rows from
\`pg_stat_database\` of the bench's own database, its own statistics queries subtracted. WAL: the records of this
database's relations and their commit records (pg_walinspect), idle background subtracted; and the whole cluster's
\`pg_current_wal_lsn()\` difference, raw (other sessions' writes on this shared server included).

| path | statements | transactions | rows inserted | rows updated | rows deleted | WAL KiB (this db) | WAL KiB (cluster, raw) | transactions, raw | idle transactions/s |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${writeRows.join('\n')}

Rows per run by table (inserted / updated / deleted; pg_stat_user_tables):

| table | ${configs.map(label).join(' | ')} |
|---|${configs.map(() => '---:').join('|')}|
${tableRows.join('\n')}
`;
console.log(`\n${text}`);
fs.writeFileSync(
  new URL('queue-runs.json', import.meta.url),
  JSON.stringify({ pickups, measured: [...measured].map(([config, rs]) => [labelOf(config), rs]), uptimes }, round),
);
if (!process.argv.includes('--no-write')) {
  const file = new URL('RESULTS.md', import.meta.url).pathname;
  // Keep the hand-written paragraphs that follow the generated part (between the markers) across runs.
  const current = fs.readFileSync(file, 'utf8');
  const heading = '## Run queue: pickup, throughput, writes per run';
  const start = current.indexOf(heading);
  const next = start >= 0 ? current.indexOf('\n## ', start + heading.length) : -1;
  const section = start >= 0 ? current.slice(start, next >= 0 ? next : undefined) : '';
  const notesAt = section.indexOf('<!-- notes -->');
  const notes = notesAt >= 0 ? `\n${section.slice(notesAt).trimEnd()}\n` : '';
  writeResultsSection(file, heading, `${text}${notes}`);
}
