// SQLite under load (issue 35): N agents in one process, each on its own thread of ONE SQLiteCheckpointer file, P
// prompts each (a tool call, then an answer: 4 messages per prompt, as W6 in run.mjs), all agents at once. Measured per
// process: event-loop lag (perf_hooks.monitorEventLoopDelay, resolution 1 ms: p50 / p99 / max), wall time, the
// checkpointer calls per prompt, and — under `strace -c`, attached to fsync/fdatasync only (seccomp filter: no other
// syscall stops) — fsyncs per prompt. The floor is the same run on a MemoryCheckpointer (`memory`) in the same build.
//
// Every configuration runs in a process of its own, builds interleaved, so "before" and "after" share one run:
//   node sqlite-load.mjs [--builds /work/main,..] [--stores memory,full,normal] [--agents 1000] [--prompts 10]
//                        [--reps 1] [--no-strace] [--think-ms 2000] [--delay-ms 0]
// --think-ms: each model response starts after 0.5–1.5 × this (a real model's latency); --delay-ms: FauxProvider's
// pause between chunks.
// `--builds`: repository roots, each with a fresh `npm run build` (dist/); default: this checkout (..).
// Never part of `npm test`.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const RESOLUTION_MS = 1;
const here = fileURLToPath(new URL('.', import.meta.url));

if (args.includes('--child')) {
  console.log(JSON.stringify(await child(option('build'), option('store'), Number(option('agents')), Number(option('prompts')))));
  process.exit(0);
}

const BUILDS = option('builds', resolve(here, '..')).split(',').map((b) => resolve(b));
const STORES = option('stores', 'memory,full,normal').split(',');
const AGENTS = option('agents', '1000');
const PROMPTS = option('prompts', '10');
const DELAY_MS = option('delay-ms', '0');
const THINK_MS = option('think-ms', '2000');
const REPS = Number(option('reps', '1'));
const STRACE = !args.includes('--no-strace') && spawnSync('strace', ['-V']).status === 0;

const load0 = os.loadavg();
const results = [];
for (let rep = 0; rep < REPS; rep++) {
  for (const store of STORES) {
    for (const build of BUILDS) {
      const result = await runChild(build, store);
      results.push(result);
      const f = (x) => (x === undefined ? '–' : x.toFixed(x < 10 ? 2 : 0));
      console.log(
        `${build} ${store}: lag p50 ${f(result.lagP50Ms)} p99 ${f(result.lagP99Ms)} max ${f(result.lagMaxMs)} ms, ` +
          `wall ${f(result.wallMs)} ms, calls/prompt ${f(result.callsPerPrompt)}, fsyncs/prompt ${f(result.fsyncsPerPrompt)}, ` +
          `bad threads ${result.badThreads}`,
      );
    }
  }
}
console.log(JSON.stringify({ loadavgStart: load0, loadavgEnd: os.loadavg(), node: process.version, results }, null, 1));

function runChild(build, store) {
  const dir = mkdtempSync(join(os.tmpdir(), 'cubepi-sqlite-load-'));
  const trace = join(dir, 'strace.txt');
  const node = [fileURLToPath(import.meta.url), '--child', '--build', build, '--store', store, '--agents', AGENTS];
  node.push('--prompts', PROMPTS, '--dir', dir, '--delay-ms', DELAY_MS, '--think-ms', THINK_MS);
  const [command, argv] = STRACE
    ? ['strace', ['-f', '--seccomp-bpf', '-c', '-e', 'trace=fsync,fdatasync', '-o', trace, process.execPath, ...node]]
    : [process.execPath, node];
  return new Promise((done, fail) => {
    const proc = spawn(command, argv, { cwd: here, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    proc.stdout.on('data', (chunk) => (out += chunk));
    proc.on('exit', (code) => {
      if (code !== 0) return fail(new Error(`${build} ${store}: exit ${code}`));
      const result = { build, store, ...JSON.parse(out.trim().split('\n').pop()) };
      if (STRACE) {
        const lines = readFileSync(trace, 'utf8').split('\n');
        let fsyncs = 0;
        for (const line of lines) {
          const m = line.trim().match(/^[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(fsync|fdatasync)$/);
          if (m) fsyncs += Number(m[1]);
        }
        result.fsyncs = fsyncs;
        result.fsyncsPerPrompt = fsyncs / result.prompts;
      }
      rmSync(dir, { recursive: true, force: true });
      done(result);
    });
  });
}

async function child(build, store, N, P) {
  const DELAY_MS = Number(option('delay-ms'));
  const THINK_MS = Number(option('think-ms'));
  const dist = (p) => pathToFileURL(join(build, 'dist', 'src', p)).href;
  const { Agent, MemoryCheckpointer, defineTool } = await import(dist('index.js'));
  const { FauxProvider, fauxMessage, fauxToolCall } = await import(dist('testing/index.js'));
  const { SQLiteCheckpointer } = await import(dist('checkpoint/sqlite.js'));
  const { z } = await import('zod');
  const file = join(option('dir'), 'threads.db');
  const checkpointer =
    store === 'memory' ? new MemoryCheckpointer() : new SQLiteCheckpointer(file, { synchronous: store });
  // Count the calls the agents make (each one its own transaction before group commit).
  let calls = 0;
  for (const method of ['append', 'saveExtra']) {
    const original = checkpointer[method].bind(checkpointer);
    checkpointer[method] = (...a) => (calls++, original(...a));
  }
  const tag = (i) => `agent-${i}`;
  const echo = defineTool({
    name: 'echo',
    description: 'returns its arguments',
    parameters: z.object({ agent: z.string(), step: z.number() }),
    execute: async (_id, { agent, step }) => `ok ${agent} ${step}`,
  });
  const agents = [];
  for (let i = 0; i < N; i++) {
    const script = [];
    for (let p = 0; p < P; p++) {
      script.push(fauxMessage([fauxToolCall('echo', { agent: tag(i), step: p }, { id: `${tag(i)}_${p}` })]));
      script.push(fauxMessage(`done ${tag(i)} ${p}`));
    }
    // A model that takes THINK_MS before it streams (as a real one does), so the agents do not keep the CPU busy
    // by themselves and the lag left is what the store adds.
    const faux = new FauxProvider({ responses: script, delayMs: DELAY_MS });
    const provider = Object.create(faux);
    provider.stream = (model, messages, request) => {
      const inner = faux.stream(model, messages, request);
      return new inner.constructor((subscriber) => {
        let subscription;
        const timer = setTimeout(() => (subscription = inner.subscribe(subscriber)), THINK_MS * (0.5 + Math.random()));
        return () => (clearTimeout(timer), subscription?.unsubscribe());
      });
    };
    agents.push(new Agent({ provider, model: 'faux', tools: [echo], threadId: `thread-${i}`, checkpointer }));
  }
  const lag = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  lag.enable();
  const t0 = performance.now();
  await Promise.all(
    agents.map(async (agent, i) => {
      for (let p = 0; p < P; p++) await agent.prompt(`go ${tag(i)} ${p}`);
    }),
  );
  const wallMs = performance.now() - t0;
  // A loop blocked until the end is recorded by the monitor's next timer: let it fire before reading.
  await new Promise((r) => setTimeout(r, 30));
  lag.disable();
  let badThreads = 0;
  for (let i = 0; i < N; i++) {
    const saved = await checkpointer.load(`thread-${i}`);
    if (saved?.seq !== 4 * P || agents[i].state.errorMessage) badThreads++;
  }
  await checkpointer.close?.();
  return {
    agents: N,
    prompts: N * P,
    wallMs,
    // The monitor records the time between its timer's runs: the lag is that minus the resolution.
    lagP50Ms: lag.percentile(50) / 1e6 - RESOLUTION_MS,
    lagP99Ms: lag.percentile(99) / 1e6 - RESOLUTION_MS,
    lagMaxMs: lag.max / 1e6 - RESOLUTION_MS,
    lagSamples: lag.count,
    callsPerPrompt: calls / (N * P),
    badThreads,
  };
}
