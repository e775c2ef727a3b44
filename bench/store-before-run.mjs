// What storing a tool call before its tool runs costs (issue 36, item 4): an Agent with a checkpointer waits at each
// tool batch until the assistant message that asked for the calls is stored (`untilStored`); before, the batch started
// beside the write. Measured in one process, alternating, on the same store and workload:
//   barrier — `new Agent({ checkpointer })`: the run path as shipped.
//   beside  — the same loop (`runAgentLoop`) through the same sink (`appendToCheckpoint`) without `untilStored`: the
//             run path before the change (a tool may start while its call is being written).
// Workload: R runs of T turns; each turn is an assistant tool call, a tool that waits `toolMs` (0: returns at once;
// else a timer), the result, and the last turn an answer. Per tool turn: median ms over the runs, and the ratio.
//
// Run after `npm run build`:  node bench/store-before-run.mjs [--runs 15] [--turns 20] [--tool-ms 0,5]
//   [--backends sqlite,postgres]   (PostgreSQL: the PG* variables; a schema of its own, dropped after)
// Printed, not written to RESULTS.md (copy the table there by hand). Never part of `npm test`.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { lastValueFrom } from 'rxjs';
import { Agent, defineTool, runAgentLoop, userMessage } from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { PostgresCheckpointer } from 'cubepi/checkpoint/postgres';
import { appendToCheckpoint } from 'cubepi/operators';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { z } from 'zod';
import { median, pgConfig } from './common.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const RUNS = Number(option('runs', '15'));
const TURNS = Number(option('turns', '20'));
const TOOL_MS = option('tool-ms', '0,5').split(',').map(Number);
const BACKENDS = option('backends', 'sqlite,postgres').split(',');

const model = { id: 'faux', provider: 'faux' };

function script() {
  let i = 0;
  return new FauxProvider({
    responses: Array.from({ length: TURNS + 1 }, () => () =>
      ++i <= TURNS ? fauxMessage([fauxToolCall('work', { i })]) : fauxMessage('done'),
    ),
  });
}

const tool = (ms) =>
  defineTool({
    name: 'work',
    description: 'Works for a while',
    parameters: z.object({ i: z.number() }),
    execute: async () => {
      if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
      return { content: [{ type: 'text', text: 'ok' }] };
    },
  });

async function barrier(checkpointer, threadId, ms) {
  const agent = new Agent({ provider: script(), model, checkpointer, threadId, tools: [tool(ms)] });
  const start = process.hrtime.bigint();
  await agent.prompt('go');
  return Number(process.hrtime.bigint() - start) / 1e6;
}

async function beside(checkpointer, threadId, ms) {
  const start = process.hrtime.bigint();
  await lastValueFrom(
    runAgentLoop({ provider: script(), model, prompts: [userMessage('go')], tools: [tool(ms)] }).pipe(
      appendToCheckpoint(checkpointer, threadId, { seq: 0 }),
    ),
  );
  return Number(process.hrtime.bigint() - start) / 1e6;
}

async function open(backend) {
  if (backend === 'sqlite') {
    const dir = mkdtempSync(join(os.tmpdir(), 'cubepi-store-before-run-'));
    const store = new SQLiteCheckpointer(join(dir, 'bench.db'));
    return { store, close: async () => (await store.close(), rmSync(dir, { recursive: true, force: true })) };
  }
  const schema = `cubepi_bench_sbr_${process.pid}`;
  const pool = new pg.Pool(pgConfig());
  const store = new PostgresCheckpointer(pool, { schema });
  return {
    store,
    close: async () => {
      await store.close?.();
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await pool.end();
    },
  };
}

const rows = [];
let thread = 0;
for (const backend of BACKENDS) {
  const { store, close } = await open(backend);
  try {
    for (const ms of TOOL_MS) {
      const times = { barrier: [], beside: [] };
      await barrier(store, `warm-${thread++}`, ms);
      await beside(store, `warm-${thread++}`, ms);
      for (let r = 0; r < RUNS; r++) {
        // Alternating, so a noisy moment of the shared machine hits both paths alike.
        const order = r % 2 === 0 ? ['barrier', 'beside'] : ['beside', 'barrier'];
        for (const path of order) {
          const run = path === 'barrier' ? barrier : beside;
          times[path].push((await run(store, `t-${thread++}`, ms)) / TURNS);
        }
      }
      const b = median(times.barrier);
      const s = median(times.beside);
      rows.push(`| ${backend} | ${ms} | ${s.toFixed(2)} | ${b.toFixed(2)} | ${(b / s).toFixed(2)}× | ${(b - s).toFixed(2)} |`);
    }
  } finally {
    await close();
  }
}

console.log(`store-before-run: ${RUNS} runs × ${TURNS} tool turns per cell, medians per tool turn, Node ${process.version}`);
console.log('| backend | tool ms | beside (before) ms / turn | barrier (now) ms / turn | ratio | added ms / turn |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
for (const row of rows) console.log(row);
