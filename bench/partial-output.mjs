// partialOutput() over a streamed JSON answer (issue 30): a generated answer (an object with an array of ~250-byte
// items) of 64 KB … 1 MB, streamed in random 1–16 character deltas (seeded), as a run's events; the total time to
// turn the deltas into partial values, per size, and the time per KB — flat when the cost grows linearly with the
// answer's size, rising when it grows quadratically (re-parsing the whole text per delta).
//
// Side by side, on the same deltas: the AI SDK's `streamText({ model, output: Output.object({ schema }) })` with a
// MockLanguageModelV3 streaming them, reading `partialOutputStream`; and the same streamText reading only `textStream`
// (its pipeline without the partial parse), so the partial parse's own cost is the difference. cubepi's figure is
// partialOutput() over the run's events (the deltas as message_update events), without a provider or the loop.
//
// Run after `npm run build` (it imports the built package by name):  cd bench && node partial-output.mjs
//   --sizes 16,32,64,128,256,512,1024 (KB)  --ai-max 64 (KB: the AI SDK's cost grows quadratically, 20 s at 64 KB
//   here, so 1 MB would take over an hour; --ai-max 1024 to run it anyway)  --reps 3  --seed 30  --no-write (print only)
// Never part of `npm test`.
import { fileURLToPath } from 'node:url';
import { from, lastValueFrom, count } from 'rxjs';
import { streamText, Output } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';
import { EMPTY_USAGE } from 'cubepi';
import { elements, partialOutput } from 'cubepi/operators';
import { PartialJsonParser } from 'cubepi/providers/kit';
import { median, writeResultsSection } from './common.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const sizes = arg('sizes', '16,32,64,128,256,512,1024').split(',').map(Number);
const aiMax = Number(arg('ai-max', '64'));
const reps = Number(arg('reps', '3'));
const seed = Number(arg('seed', '30'));
const write = !process.argv.includes('--no-write');

/** A seeded PRNG (mulberry32). */
function prng(s) {
  return () => {
    s |= 0;
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = 'plan trip river "quoted" café naïve 東京 data\\path line\nbreak alpha beta gamma delta 42 x'.split(' ');
const Item = z.object({
  id: z.number(),
  name: z.string(),
  description: z.string(),
  tags: z.array(z.string()),
  score: z.number(),
  done: z.boolean(),
});
const Answer = z.object({ title: z.string(), summary: z.string(), items: z.array(Item) });

/** An answer of about `bytes` bytes of JSON. */
function answerOf(bytes, random) {
  const words = (n) => Array.from({ length: n }, () => WORDS[Math.floor(random() * WORDS.length)]).join(' ');
  const value = { title: words(6), summary: words(40), items: [] };
  let size = JSON.stringify(value).length;
  for (let id = 0; size < bytes; id++) {
    const item = {
      id,
      name: words(3),
      description: words(20 + Math.floor(random() * 20)),
      tags: [words(1), words(1), words(2)],
      score: Math.round(random() * 1e6) / 1e3,
      done: random() < 0.5,
    };
    value.items.push(item);
    size += JSON.stringify(item).length + 1;
  }
  return JSON.stringify(value);
}

/** `json` in random 1–16 character deltas. */
function deltasOf(json, random) {
  const out = [];
  for (let i = 0; i < json.length; ) {
    const n = 1 + Math.floor(random() * 16);
    out.push(json.slice(i, i + n));
    i += n;
  }
  return out;
}

const message = { role: 'assistant', content: [], stopReason: 'stop', usage: EMPTY_USAGE, provider: 'p', model: 'm', timestamp: 0 };
function eventsOf(deltas) {
  const events = [
    { type: 'model_attempt', runId: 'r', turnIndex: 0, invocationId: 'i', attemptId: 'a', attempt: 1, provider: 'p', model: 'm', output: { mode: 'native' } },
    { type: 'message_start', runId: 'r', message },
  ];
  for (const delta of deltas)
    events.push({ type: 'message_update', runId: 'r', message, streamEvent: { type: 'text_delta', contentIndex: 0, delta, partial: message } });
  // No validated value at the end: what is measured is the stream of partial values.
  events.push({ type: 'agent_end', runId: 'r', messages: [], outcome: 'completed', usage: EMPTY_USAGE });
  return events;
}

const ms = (start) => Number(process.hrtime.bigint() - start) / 1e6;

async function cubepi(events) {
  const t = process.hrtime.bigint();
  const n = await lastValueFrom(from(events).pipe(partialOutput(Answer), count()));
  return { ms: ms(t), emissions: n };
}

async function cubepiElements(events) {
  const t = process.hrtime.bigint();
  const n = await lastValueFrom(from(events).pipe(partialOutput(Answer), elements('items'), count()));
  return { ms: ms(t), emissions: n };
}

function parserOnly(deltas) {
  const t = process.hrtime.bigint();
  const parser = new PartialJsonParser();
  for (const delta of deltas) parser.push(delta);
  return { ms: ms(t), emissions: 0 };
}

function mockModel(deltas) {
  const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
  return new MockLanguageModelV3({
    doStream: async () => ({
      stream: new ReadableStream({
        start(controller) {
          controller.enqueue({ type: 'stream-start', warnings: [] });
          controller.enqueue({ type: 'text-start', id: 't' });
          for (const delta of deltas) controller.enqueue({ type: 'text-delta', id: 't', delta });
          controller.enqueue({ type: 'text-end', id: 't' });
          controller.enqueue({ type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage });
          controller.close();
        },
      }),
    }),
  });
}

// `partial`: streamText with `output`, reading partialOutputStream. `text`: streamText without `output`, reading
// textStream — its pipeline on the same deltas without the partial parse (with `output`, the parse runs whichever
// stream is read).
async function aiSdk(deltas, read) {
  const t = process.hrtime.bigint();
  const result =
    read === 'partial'
      ? streamText({ model: mockModel(deltas), prompt: 'x', output: Output.object({ schema: Answer }) })
      : streamText({ model: mockModel(deltas), prompt: 'x' });
  let n = 0;
  for await (const _ of read === 'partial' ? result.partialOutputStream : result.textStream) n++;
  return { ms: ms(t), emissions: n };
}

async function measure(run) {
  const runs = [];
  for (let r = 0; r < reps; r++) runs.push(await run());
  return { ms: median(runs.map((x) => x.ms)), emissions: runs[0].emissions };
}

const rows = [];
// A warm-up on a small answer, so the first size does not pay for the JIT.
{
  const random = prng(seed + 1);
  const deltas = deltasOf(answerOf(32 * 1024, random), random);
  await cubepi(eventsOf(deltas));
  await aiSdk(deltas, 'partial');
  await aiSdk(deltas, 'text');
}
for (const kb of sizes) {
  const random = prng(seed);
  const json = answerOf(kb * 1024, random);
  const deltas = deltasOf(json, random);
  const events = eventsOf(deltas);
  const row = { kb, bytes: json.length, deltas: deltas.length };
  row.parser = await measure(async () => parserOnly(deltas));
  row.cubepi = await measure(() => cubepi(events));
  row.elements = await measure(() => cubepiElements(events));
  if (kb <= aiMax) {
    row.aiText = await measure(() => aiSdk(deltas, 'text'));
    row.aiPartial = await measure(() => aiSdk(deltas, 'partial'));
  }
  // The last value equals JSON.parse of the answer (what the table measures is a correct stream).
  if (kb === sizes[0]) {
    const values = [];
    from(events).pipe(partialOutput()).subscribe((v) => values.push(v));
    if (JSON.stringify(values.at(-1)) !== json) throw new Error('partialOutput() did not end with the answer');
  }
  rows.push(row);
  console.log(JSON.stringify(row));
}

const perKb = (x, row) => (x === undefined ? '—' : (x.ms / (row.bytes / 1024)).toFixed(3));
const growth = (key, row, from = rows.find((r) => r[key] !== undefined)) =>
  row[key] === undefined || from === undefined
    ? '—'
    : ((row[key].ms / from[key].ms) / (row.bytes / from.bytes)).toFixed(2);
const lines = [
  '## partialOutput() over a streamed JSON answer (partial-output.mjs, issue 30)',
  '',
  `Node ${process.version}, ${new Date().toISOString().slice(0, 10)}; seed ${seed}, median of ${reps}; deltas of 1–16 characters. ` +
    'ms per KB of answer (flat = linear growth) and growth = (time ÷ time at the smallest size) ÷ (size ÷ smallest size): ' +
    '1.00 is linear, size ÷ smallest size is quadratic. "parser": PartialJsonParser.push over the deltas alone. ' +
    '"AI SDK partial − text": the partial parse\'s own cost (streamText with output reading partialOutputStream, minus ' +
    'streamText without output reading textStream, on the same deltas), divided by partialOutput()\'s whole cost.',
  '',
  '| answer | deltas | parser ms/KB | partialOutput() ms/KB | growth | + elements() ms/KB | AI SDK text ms/KB | AI SDK partial ms/KB | growth | (AI SDK partial − text) ÷ partialOutput() |',
  '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
];
for (const row of rows) {
  const ratio =
    row.aiPartial === undefined ? '—' : ((row.aiPartial.ms - row.aiText.ms) / row.cubepi.ms).toFixed(1) + '×';
  lines.push(
    `| ${row.kb} KB | ${row.deltas} | ${perKb(row.parser, row)} | ${perKb(row.cubepi, row)} | ${growth('cubepi', row)} | ${perKb(row.elements, row)} | ${perKb(row.aiText, row)} | ${perKb(row.aiPartial, row)} | ${growth('aiPartial', row)} | ${ratio} |`,
  );
}
lines.push('', `Emissions at ${rows.at(-1).kb} KB: partialOutput() ${rows.at(-1).cubepi.emissions}, elements() ${rows.at(-1).elements.emissions}. Sizes over ${aiMax} KB: AI SDK not run (its cost grows quadratically; \`--ai-max 1024\` runs it).`);
const text = lines.join('\n');
console.log('\n' + text);
if (write) writeResultsSection(fileURLToPath(new URL('RESULTS.md', import.meta.url)), lines[0], text);
