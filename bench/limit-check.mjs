// What the PostgreSQL limit check adds to starting a run on a run queue (issue 37: "the limit check adds ≤ 1 ms p50 to
// run start on PostgreSQL"). One createQueueServer over one pool, its `fetch` called directly (no HTTP socket, so the
// difference is the check's own), `POST /threads/:id/runs` alternating between two servers on the same queue:
//   without — no `limits`: the start is the queue's enqueue (a row and a pg-boss job in one transaction);
//   with    — `limits` on a PostgresLimitStore (all four limits set, none reached): the admit function first (one
//             round trip), then the same enqueue.
// Principals rotate over --principals ids (each request authenticated by its own token), so each holds a few queued
// runs' slots, as real callers do. No worker runs: runs stay queued, which is the most slots a principal's admission
// counts. Per variant: p50 and p90 of the start (ms); the p50 difference is the check's cost. Beside them, on the same
// pool, interleaved: the admit call alone and a `SELECT 1` — the check is one round trip, so on a loaded machine its
// cost is that round trip's.
//
// With `--baseline DIR` (another build's `dist`, e.g. main's copied into the worktree as dist-old), a third variant,
// `with, baseline`, is that build's createQueueServer and createPostgresLimitStore (same limits, queue, pool and
// tables), in the same rotation: a change to the start path measured against the code before it, interleaved.
//
// Run after `npm run build`:  node bench/limit-check.mjs [--starts 2000] [--principals 100] [--warm 200]
//                             [--baseline ../dist-old]
// Printed, not written to RESULTS.md (copy the table there by hand). Never part of `npm test`.
import pg from 'pg';
import { median, pgConfig } from './common.mjs';

const load = async (entry, built) => import(entry).catch(() => import(built));
const { createQueueServer, bearerToken } = await load('cubepi/server', '../dist/src/server/index.js');
const { createRunQueue, createPostgresLimitStore } = await load('cubepi/worker', '../dist/src/worker/index.js');
const { PostgresCheckpointer } = await load('cubepi/checkpoint/postgres', '../dist/src/checkpoint/postgres.js');

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return Number(i >= 0 ? args[i + 1] : fallback);
};
const baselineAt = args.indexOf('--baseline');
const fromBaseline = (entry) => import(new URL(`${args[baselineAt + 1]}/src/${entry}`, import.meta.url).href);
const baseline =
  baselineAt >= 0
    ? { ...(await fromBaseline('server/index.js')), ...(await fromBaseline('worker/index.js')) }
    : undefined;
const STARTS = option('starts', 2000);
const PRINCIPALS = option('principals', 100);
const WARM = option('warm', 200);

const schema = `bench_limits_${process.pid}`;
const pool = new pg.Pool({ ...pgConfig(), max: 4 });
const queue = createRunQueue({ pool, schema, bossSchema: `${schema}_boss` });
const store = createPostgresLimitStore({ pool, schema });
const checkpointer = new PostgresCheckpointer(pool, { schema });
const tokens = Object.fromEntries(
  Array.from({ length: PRINCIPALS }, (_, i) => [`token-of-user-${String(i).padStart(8, '0')}`, `user-${i}`]),
);
const tokenList = Object.keys(tokens);
const common = { queue, agent: 'bench', checkpointer, authenticate: bearerToken(tokens) };
const limits = { concurrentRuns: 1_000_000, requestsPerMinute: 1_000_000, tokensPerMinute: 1e12, usdPerDay: 1e9 };
const servers = {
  without: createQueueServer(common),
  with: createQueueServer({ ...common, limits: { policy: limits, store } }),
  ...(baseline
    ? {
        baseline: baseline.createQueueServer({
          ...common,
          limits: { policy: limits, store: baseline.createPostgresLimitStore({ pool, schema }) },
        }),
      }
    : {}),
};
const variants = Object.keys(servers);

let n = 0;
async function start(server) {
  const i = n++;
  const request = new Request(`http://bench/threads/t${i}/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${tokenList[i % PRINCIPALS]}` },
    body: JSON.stringify({ input: 'hello' }),
  });
  const t0 = process.hrtime.bigint();
  const response = await server.fetch(request);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (response.status !== 201) throw new Error(`start answered ${response.status}: ${await response.text()}`);
  return ms;
}

const percentile = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

try {
  await queue.start();
  await store.migrate();
  for (let i = 0; i < WARM; i++) await start(servers[variants[i % variants.length]]);
  const times = { without: [], with: [], baseline: [], admit: [], select1: [] };
  const timed = async (work) => {
    const t0 = process.hrtime.bigint();
    await work();
    return Number(process.hrtime.bigint() - t0) / 1e6;
  };
  for (let i = 0; i < STARTS; i++) {
    const variant = variants[i % variants.length];
    times[variant].push(await start(servers[variant]));
    if (variant === 'without') {
      times.admit.push(await timed(() => store.admit(`user-${i % PRINCIPALS}`, crypto.randomUUID(), limits)));
      times.select1.push(await timed(() => pool.query('SELECT 1')));
    }
  }
  const row = (name) => `| ${name} | ${median(times[name]).toFixed(3)} | ${percentile(times[name], 0.9).toFixed(3)} |`;
  console.log(`Run start on PostgreSQL, ${times.without.length} starts per variant, ${PRINCIPALS} principals (ms)\n`);
  console.log('| variant | p50 | p90 |\n| --- | --- | --- |');
  console.log(row('without').replace('| without |', '| start, without limits |'));
  console.log(row('with').replace('| with |', '| start, with the limit check |'));
  if (baseline) console.log(row('baseline').replace('| baseline |', '| start, with the limit check, baseline build |'));
  console.log(row('admit').replace('| admit |', '| the admit call alone |'));
  console.log(row('select1').replace('| select1 |', '| `SELECT 1` (one round trip) |'));
  console.log(`\np50 added by the limit check: ${(median(times.with) - median(times.without)).toFixed(3)} ms`);
  if (baseline) {
    const added = (median(times.baseline) - median(times.without)).toFixed(3);
    console.log(`p50 added by the limit check in the baseline build: ${added} ms`);
  }
  console.log(`load average at the end: ${(await import('node:fs')).readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
} finally {
  for (const server of Object.values(servers)) server.close();
  await queue.close();
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}_boss" CASCADE`);
  await pool.end();
}
