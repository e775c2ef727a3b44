// W3 with compaction: the W3 workload (a thread seeded to H messages in SQLite, then turns of +4 messages: user →
// tool call → tool result → answer) with and without a `Compaction` middleware (128k-token window, triggerAt 0.8,
// keepRecent 8), in fresh processes, interleaved. Per measured turn: wall ms and the request the model received
// (messages, JSON bytes). The first turn (not measured, as in W3) restores the thread and, with compaction on,
// summarises it: its time is reported on its own.
//
// LangGraph: the pinned @langchain/langgraph (1.7.3, bench/package.json) has no summarization (LangChain v1's
// summarizationMiddleware lives in the `langchain` package, not a dependency here; @langchain/core's trimMessages
// trims, it does not summarise), so the row stands alone.
//
// Run after `npm run build` at the root:  node bench/compaction-cost.mjs [--H 10000] [--turns 30] [--reps 3] [--no-write]
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, writeResultsSection } from './common.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const H = Number(option('H', '10000'));
const TURNS = Number(option('turns', '30'));
const REPS = Number(option('reps', '3'));
const WRITE = !args.includes('--no-write');
const here = fileURLToPath(new URL('.', import.meta.url));
const RESULTS = join(here, 'RESULTS.md');
const HEADING = '## W3 with compaction (a thread of H messages, Compaction on and off)';

function measure(compaction, rep) {
  const dbPath = join(os.tmpdir(), `cubepi-compaction-${process.pid}-${rep}-${compaction}.db`);
  const params = JSON.stringify({ H, turns: TURNS, saver: 'sqlite', dbPath, compaction });
  const out = execFileSync(process.execPath, [join(here, 'worker.mjs'), join(here, 'adapters/cubepi.mjs'), 'w3', params], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const line = out.split('\n').find((l) => l.startsWith('RESULT '));
  if (!line) throw new Error(`no RESULT from the worker:\n${out}`);
  return JSON.parse(line.slice('RESULT '.length));
}

const runs = { off: [], on: [] };
for (let rep = 0; rep < REPS; rep++) {
  for (const mode of ['off', 'on']) {
    const r = measure(mode === 'on', rep);
    runs[mode].push(r);
    process.stderr.write(`${mode} rep ${rep}: ${median(r.rows.map((x) => x.ms)).toFixed(2)} ms/turn\n`);
  }
}

const kib = (b) => `${(b / 1024).toFixed(1)} KiB`;
const row = (mode) => {
  const rs = runs[mode];
  const all = rs.flatMap((r) => r.rows);
  const ms = all.map((x) => x.ms);
  const cpu = median(all.map((x) => x.cpuMs));
  const msgs = median(all.map((x) => x.requestMessages));
  const bytes = median(all.map((x) => x.requestBytes));
  const warm = median(rs.map((r) => r.warmMs));
  const summaries = rs.map((r) => r.summaries).join(', ');
  return { ms: median(ms), min: Math.min(...ms), max: Math.max(...ms), cpu, n: all.length, msgs, bytes, warm, summaries };
};
const off = row('off');
const on = row('on');
const text = `${HEADING}

W3's SQLite workload (\`adapters/cubepi.mjs\` \`w3\`, \`compaction-cost.mjs\`): a thread of H = ${H.toLocaleString('en')} seeded
messages (seedGroup content, ~25 tokens each), then ${TURNS} measured turns of +4 messages, ${REPS} processes per mode,
interleaved. **Compaction on**: \`new Compaction({ triggerAt: 0.8, keepRecent: 8, contextWindow: 128_000 })\`; the
scripted model answers the summarising call with a fixed ~1 KB summary. The first turn (restore, and with compaction
on the summarising call and storing the summary) is not a measured turn; its time is given apart. **Request**: what the
model received at the measured turns' calls (messages, bytes of their JSON). Medians (min–max over all turns); CPU
ms is this process's user + system time over the turn (\`process.cpuUsage\`), steadier than wall time on a loaded
machine.
LangGraph 1.7.3 (the pinned version) has no summarization to set beside it.

| mode | H | ms/turn | CPU ms/turn | turns | request messages | request bytes | first turn (restore + compaction) ms | summarising calls per process |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |
| compaction off | ${H.toLocaleString('en')} | ${off.ms.toFixed(2)} (${off.min.toFixed(2)}–${off.max.toFixed(2)}) | ${off.cpu.toFixed(2)} | ${off.n} | ${off.msgs.toLocaleString('en')} | ${kib(off.bytes)} | ${off.warm.toFixed(1)} | ${off.summaries} |
| compaction on | ${H.toLocaleString('en')} | ${on.ms.toFixed(2)} (${on.min.toFixed(2)}–${on.max.toFixed(2)}) | ${on.cpu.toFixed(2)} | ${on.n} | ${on.msgs.toLocaleString('en')} | ${kib(on.bytes)} | ${on.warm.toFixed(1)} | ${on.summaries} |

With compaction on, the request is the stored summary plus the turns after it, and stays below the trigger for the
measured turns: one summarising call per process, at the first turn. The stored transcript keeps all H + ${4 * (TURNS + 1)}
messages either way. A turn still hands each \`transformContext\` a copy of the whole transcript (O(H)), as for any
context middleware, and \`Compaction\` fingerprints one message and estimates only the request it sends.
`;
console.log(text);
if (WRITE) writeResultsSection(RESULTS, HEADING, text);
