// Job pickup latency of the two PostgreSQL job queues considered for cubepi/worker (issue 23): graphile-worker and
// pg-boss, in the same run, on the same local PostgreSQL, each in a schema of its own (dropped at the end).
//
// Pickup latency = from just before the enqueue call to the first line of the handler, for an IDLE worker: one job at
// a time, the next enqueued 20–60 ms (random) after the previous handler started, so the worker is waiting when
// each job arrives (the interactive-agent case: a prompt arrives, a free worker should start it now). Both the
// producer and the worker live in this process (one clock); the worker has its own connections as in production.
//
// Cases (each: warm-up jobs first, not counted):
//   graphile            graphile-worker, plain jobs (LISTEN/NOTIFY wakes the worker)
//   graphile-queue      graphile-worker, each job with queueName = its thread (per-key serialisation)
//   pgboss-notify       pg-boss, useListenNotify + queue `notify: true`, standard policy
//   pgboss-fifo         pg-boss, same, policy `key_strict_fifo` with singletonKey = thread (per-key serialisation)
//   pgboss-poll         pg-boss without LISTEN/NOTIFY, pollingIntervalSeconds 0.5 (its floor): fewer jobs
//
//   node queue-pickup.mjs [--jobs 200] [--poll-jobs 40] [--no-write]
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { Logger, run as runGraphile } from 'graphile-worker';
import { PgBoss } from 'pg-boss';
import { pgConfig, sleep, writeResultsSection } from './common.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const JOBS = Number(arg('jobs', 200));
const POLL_JOBS = Number(arg('poll-jobs', 40));
const WARMUP = 10;
const THREADS = 20;

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const summary = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, p50: quantile(s, 0.5), p95: quantile(s, 0.95), p99: quantile(s, 0.99), max: s.at(-1) };
};
async function dropSchema(schema) {
  const admin = new pg.Client(pgConfig());
  await admin.connect();
  await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
  await admin.end();
}
const schemaName = (label) => `bench_${label}_${randomBytes(4).toString('hex')}`;

/** Enqueues `count` jobs one at a time, each when the worker is idle; returns the latencies (ms). */
async function measure(count, enqueue, started) {
  const latencies = [];
  for (let i = 0; i < WARMUP + count; i++) {
    await sleep(20 + Math.random() * 40);
    const picked = started.next();
    const t0 = performance.now();
    await enqueue(i, t0);
    const t1 = await picked;
    if (i >= WARMUP) latencies.push(t1 - t0);
  }
  return latencies;
}

/** A one-shot signal per job: `next()` resolves with the time the handler started. */
function starts() {
  let resolve;
  return {
    next: () => new Promise((r) => (resolve = r)),
    hit: () => resolve(performance.now()),
  };
}

async function graphile(queued) {
  const schema = schemaName('gw');
  const pool = new pg.Pool({ ...pgConfig(), max: 10 });
  pool.on('error', () => {});
  const started = starts();
  const runner = await runGraphile({
    pgPool: pool,
    schema,
    concurrency: 1,
    noHandleSignals: true,
    pollInterval: 2000,
    logger: new Logger(() => () => {}),
    taskList: { run: async () => started.hit() },
  });
  try {
    return await measure(
      JOBS,
      (i) => runner.addJob('run', { i }, queued ? { queueName: `thread-${i % THREADS}` } : {}),
      started,
    );
  } finally {
    await runner.stop();
    await runner.promise;
    await sleep(500); // its batched job completions land after stop()
    await pool.query(`DROP SCHEMA "${schema}" CASCADE`);
    await pool.end();
  }
}

async function pgboss({ notify, policy, count }) {
  const schema = schemaName('boss');
  const boss = new PgBoss({ ...pgConfig(), schema, useListenNotify: notify, supervise: true, schedule: false });
  boss.on('error', (error) => console.error('pg-boss:', error.message));
  boss.on('warning', (warning) => console.error('pg-boss warning:', warning.message));
  await boss.start();
  const started = starts();
  try {
    await boss.createQueue('run', { policy, notify });
    await boss.work('run', { pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 30 }, async () =>
      started.hit(),
    );
    return await measure(
      count,
      (i) => boss.send('run', { i }, policy === 'key_strict_fifo' ? { singletonKey: `thread-${i % THREADS}` } : {}),
      started,
    );
  } finally {
    await boss.stop({ graceful: true, timeout: 5000 });
    await dropSchema(schema);
  }
}

// Crash recovery (pg-boss): a worker process takes a job and is killed with SIGKILL; a worker in this process waits
// for the retry. With heartbeatSeconds H (its floor is 10) the supervisor fails the silent job once its heartbeat is
// H old and it is retried; supervision runs every superviseIntervalSeconds/monitorIntervalSeconds (defaults 60 s, here
// 2 s); the recovering worker polls every 0.5 s (a retry sends no NOTIFY). graphile-worker has no equivalent to measure: a locked job (and its named queue) stays locked for 4 hours
// (hard-coded `job_expiry`), unless something calls force_unlock_workers for the dead worker's id.
const BOSS_CRASH = { superviseIntervalSeconds: 2, monitorIntervalSeconds: 2 };
async function pgbossCrash() {
  const schema = schemaName('bosscrash');
  const boss = new PgBoss({ ...pgConfig(), schema, useListenNotify: true, schedule: false, ...BOSS_CRASH });
  boss.on('error', () => {});
  await boss.start();
  try {
    await boss.createQueue('run', { notify: true, heartbeatSeconds: 10, retryLimit: 3, retryDelay: 0 });
    const child = spawn(
      process.execPath,
      [fileURLToPath(import.meta.url), '--role', 'crash-worker', '--schema', schema],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    await boss.send('run', {});
    await new Promise((resolve) => child.stdout.once('data', resolve)); // it printed "started"
    await sleep(1000 + Math.random() * 2000); // mid-run, a heartbeat or two in
    const retried = new Promise((resolve) =>
      boss.work('run', { pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 0.5 }, async () =>
        resolve(performance.now()),
      ),
    );
    const killed = performance.now();
    child.kill('SIGKILL');
    return ((await retried) - killed) / 1000;
  } finally {
    await boss.stop({ graceful: false, timeout: 1000 });
    await dropSchema(schema);
  }
}

if (arg('role') === 'crash-worker') {
  const boss = new PgBoss({
    ...pgConfig(),
    schema: arg('schema'),
    useListenNotify: true,
    supervise: false,
    schedule: false,
  });
  boss.on('error', () => {});
  await boss.start();
  await boss.work('run', { pollingIntervalSeconds: 0.5 }, () => {
    process.stdout.write('started\n');
    return new Promise(() => {}); // runs until killed
  });
  await new Promise(() => {});
}

// Per-key serialisation: KEYS keys × PER_KEY jobs enqueued at once, 4 handlers at a time, each 5–15 ms; the first job
// of key 0 fails once. Checked for each library: no two jobs of one key run at once; each key's jobs start in
// enqueue order, including across the failure (a later job of key 0 starting before the failed job's retry breaks a
// thread's order: a prompt answered before the one sent first).
const KEYS = 10;
const PER_KEY = 8;
async function serialCheck(enqueueAll, startWorker) {
  const runs = [];
  let failed = false;
  let done = 0;
  let allDone;
  const finished = new Promise((resolve) => (allDone = resolve));
  const handle = async ({ key, n }) => {
    const run = { key, n, start: performance.now(), end: Infinity };
    runs.push(run);
    await sleep(5 + Math.random() * 10);
    run.end = performance.now();
    if (key === 0 && n === 0 && !failed) {
      failed = true;
      run.failed = true;
      throw new Error('fails once');
    }
    if (++done === KEYS * PER_KEY) allDone();
  };
  const stop = await startWorker(handle);
  try {
    await enqueueAll();
    await Promise.race([finished, sleep(60_000).then(() => Promise.reject(new Error('serial check: timed out')))]);
  } finally {
    await stop();
  }
  let overlaps = 0;
  let outOfOrder = 0;
  for (let key = 0; key < KEYS; key++) {
    const mine = runs.filter((r) => r.key === key).sort((a, b) => a.start - b.start);
    for (let i = 1; i < mine.length; i++) if (mine[i].start < mine[i - 1].end) overlaps++;
    const order = mine.filter((r) => !r.failed).map((r) => r.n);
    order.forEach((n, i) => n !== i && outOfOrder++);
  }
  return { overlaps, outOfOrder, runs: runs.length };
}
const jobsInOrder = () => {
  const jobs = [];
  for (let n = 0; n < PER_KEY; n++) for (let key = 0; key < KEYS; key++) jobs.push({ key, n });
  return jobs;
};

async function graphileSerial() {
  const schema = schemaName('gwserial');
  const pool = new pg.Pool({ ...pgConfig(), max: 10 });
  pool.on('error', () => {});
  let runner;
  try {
    return await serialCheck(
      async () => {
        for (const job of jobsInOrder()) await runner.addJob('run', job, { queueName: `thread-${job.key}` });
      },
      async (handle) => {
        runner = await runGraphile({
          pgPool: pool,
          schema,
          concurrency: 4,
          noHandleSignals: true,
          pollInterval: 500,
          logger: new Logger(() => () => {}),
          taskList: { run: async (payload) => handle(payload) },
        });
        return async () => {
          await runner.stop();
          await runner.promise;
          await sleep(500);
        };
      },
    );
  } finally {
    await pool.query(`DROP SCHEMA "${schema}" CASCADE`);
    await pool.end();
  }
}

async function pgbossSerial() {
  const schema = schemaName('bossserial');
  const boss = new PgBoss({ ...pgConfig(), schema, useListenNotify: true, schedule: false });
  boss.on('error', () => {});
  await boss.start();
  try {
    await boss.createQueue('run', { policy: 'key_strict_fifo', notify: true, retryLimit: 3, retryDelay: 0 });
    return await serialCheck(
      async () => {
        for (const job of jobsInOrder()) await boss.send('run', job, { singletonKey: `thread-${job.key}` });
      },
      async (handle) => {
        await boss.work(
          'run',
          { localConcurrency: 4, pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 0.5 },
          async ([job]) => handle(job.data),
        );
        return async () => {};
      },
    );
  } finally {
    await boss.stop({ graceful: true, timeout: 5000 });
    await dropSchema(schema);
  }
}

const cases = [
  ['graphile', () => graphile(false)],
  ['graphile-queue', () => graphile(true)],
  ['pgboss-notify', () => pgboss({ notify: true, policy: 'standard', count: JOBS })],
  ['pgboss-fifo', () => pgboss({ notify: true, policy: 'key_strict_fifo', count: JOBS })],
  ['pgboss-poll', () => pgboss({ notify: false, policy: 'standard', count: POLL_JOBS })],
];

const results = [];
for (const [name, runCase] of cases) {
  const stats = summary(await runCase());
  results.push({ name, ...stats });
  console.log(
    name,
    JSON.stringify(stats, (_, v) => (typeof v === 'number' ? Math.round(v * 100) / 100 : v)),
  );
}

const serial = { graphile: await graphileSerial(), pgboss: await pgbossSerial() };
console.log('per-key serialisation', JSON.stringify(serial));

const CRASHES = Number(arg('crashes', 3));
const recoveries = [];
for (let i = 0; i < CRASHES; i++) recoveries.push(await pgbossCrash());
console.log('pgboss crash recovery (s)', recoveries.map((r) => r.toFixed(1)).join(', '));

const versionOf = (name) =>
  JSON.parse(readFileSync(new URL(`node_modules/${name}/package.json`, import.meta.url), 'utf8')).version;
const versions = { graphile: versionOf('graphile-worker'), boss: versionOf('pg-boss') };
const fmt = (v) => v.toFixed(2);
const table = [
  '| case | jobs | p50 ms | p95 ms | p99 ms | max ms |',
  '|---|---:|---:|---:|---:|---:|',
  ...results.map((r) => `| ${r.name} | ${r.n} | ${fmt(r.p50)} | ${fmt(r.p95)} | ${fmt(r.p99)} | ${fmt(r.max)} |`),
].join('\n');
const text = `## Job pickup latency (queue-pickup.mjs)

graphile-worker ${versions.graphile}, pg-boss ${versions.boss}, Node ${process.version}, local PostgreSQL, ${new Date()
  .toISOString()
  .slice(0, 10)}. Enqueue → handler start for an idle worker (one job at a time, 20–60 ms apart), ${WARMUP} warm-up jobs
not counted. See docs/scale-out.md for what the figures mean for the choice.

${table}

Per-key serialisation (${KEYS} keys × ${PER_KEY} jobs enqueued at once, 4 handlers at a time, the first job of one key
failing once): graphile-worker \`queueName\`: ${serial.graphile.overlaps} overlapping runs of one key,
${serial.graphile.outOfOrder} jobs started out of their key's order; pg-boss \`key_strict_fifo\` + \`singletonKey\`:
${serial.pgboss.overlaps} overlapping, ${serial.pgboss.outOfOrder} out of order.

pg-boss crash recovery (SIGKILL of the worker mid-job → the job's retry starts in another worker), heartbeatSeconds
10, superviseIntervalSeconds and monitorIntervalSeconds 2: ${recoveries.map((r) => `${r.toFixed(1)} s`).join(', ')}.
`;
console.log(`\n${text}`);
if (!process.argv.includes('--no-write'))
  writeResultsSection(new URL('RESULTS.md', import.meta.url).pathname, '## Job pickup latency', text);
