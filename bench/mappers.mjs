// W2 through each vendor's wire mapper (issue 29): deltas per second from a recorded stream, Gemini and Bedrock beside
// Anthropic, in one run. Each vendor's stream is its recording (test/fixtures/providers/) with its text-delta event
// repeated to N deltas of 1–16 characters (the same pieces for every vendor): the events the SDK hands the mapper
// (Anthropic and Bedrock: the parsed objects; Gemini: the SDK's GenerateContentResponse instances, with their own
// usageMetadata object on every chunk as the SDK yields it), built before the clock starts and read through once, off
// the clock, in batches of 512 just before they are mapped (an SDK hands over each event just parsed, in cache).
// Timed: mapper.map + MessageAssembler (every delta's immutable snapshot), what fromSdkStream runs per wire event, in
// wall time and in the process's CPU time (the ratios are on CPU time: on a busy host it leaves out the waits for a
// core). Reps rotate the order in one process after a warm-up pass; the figure is each mapper's median over reps and
// its ratio to Anthropic's.
//
//   npm run build && node bench/mappers.mjs [--n 100000] [--reps 9]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { median, now, nsToMs } from './common.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '..');
const require = createRequire(path.join(root, 'package.json'));
const dist = (file) => import(path.join(root, 'dist/src/providers', file));
const { MessageAssembler } = await dist('message-assembler.js');
const { anthropicWireMapper } = await dist('anthropic-wire-mapper.js');
const { googleWireMapper } = await dist('google-wire-mapper.js');
const { bedrockWireMapper } = await dist('bedrock-wire-mapper.js');
const { GenerateContentResponse } = require('@google/genai');

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const N = arg('n', 100_000);
const REPS = arg('reps', 9);

const fixture = (vendor, file) =>
  fs
    .readFileSync(path.join(root, 'test/fixtures/providers', vendor, file), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line));

// The same text pieces for every vendor: 1–16 characters, a fixed pseudo-random sequence.
let seed = 7;
const pieces = Array.from({ length: N }, () => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return 'abcdefghijklmnop'.slice(0, 1 + (seed % 16));
});

function anthropicEvents() {
  const recorded = fixture('anthropic', 'text-basic.vercel-ai.jsonl');
  const first = recorded.findIndex((e) => e.type === 'content_block_delta');
  const after = recorded.findLastIndex((e) => e.type === 'content_block_delta');
  const template = recorded[first];
  const deltas = pieces.map((text) => ({ ...template, delta: { ...template.delta, text } }));
  return [...recorded.slice(0, first), ...deltas, ...recorded.slice(after + 1)];
}

function geminiEvents() {
  const recorded = fixture('google', 'text-usage-signature-empty-part.vercel-ai.jsonl');
  const template = recorded[0];
  const chunk = (text) => {
    const [candidate] = template.candidates;
    // The SDK's chunk: its own usageMetadata object (parsed from each SSE event), the candidate and content copied.
    return Object.assign(new GenerateContentResponse(), {
      ...template,
      candidates: [{ ...candidate, content: { ...candidate.content, parts: [{ text }] } }],
      usageMetadata: structuredClone(template.usageMetadata),
    });
  };
  const tail = recorded.slice(1).map((json) => Object.assign(new GenerateContentResponse(), json));
  return [...pieces.map(chunk), ...tail];
}

function bedrockEvents() {
  const recorded = fixture('bedrock', 'text-basic.vercel-ai.jsonl');
  const first = recorded.findIndex((e) => e.contentBlockDelta !== undefined);
  const after = recorded.findLastIndex((e) => e.contentBlockDelta !== undefined);
  const template = recorded[first].contentBlockDelta;
  const deltas = pieces.map((text) => ({ contentBlockDelta: { ...template, delta: { text } } }));
  return [...recorded.slice(0, first), ...deltas, ...recorded.slice(after + 1)];
}

const model = (id, provider) => ({ id, provider });
const vendors = [
  { name: 'anthropic', events: anthropicEvents(), mapper: (asm) => anthropicWireMapper(asm, model('claude-sonnet-4-5', 'anthropic')) },
  { name: 'gemini', events: geminiEvents(), mapper: (asm) => googleWireMapper(asm, model('gemini-3-pro-preview', 'google')) },
  { name: 'bedrock', events: bedrockEvents(), mapper: (asm) => bedrockWireMapper(asm, model('us.anthropic.claude-sonnet-4-5-20250929-v1:0', 'bedrock')) },
];

// Events are timed in batches, each read through once off the clock before it is mapped. An SDK hands the mapper each
// event right after parsing it, in cache; 100,000 events built beforehand are not, and reading them cold measured the
// depth of each SDK's objects rather than the mapper (a Gemini chunk is eight heap objects, an Anthropic delta two: with
// Gemini's usage object fresh per chunk, as the SDK yields it, cold reads alone cost Gemini ~20% against Anthropic).
const BATCH = 512;
function touch(value) {
  if (value === null || typeof value !== 'object') return;
  for (const key in value) touch(value[key]);
}

function once(vendor) {
  const asm = new MessageAssembler({ provider: vendor.name, model: 'm', timestamp: 1 });
  const mapper = vendor.mapper(asm);
  let deltas = 0;
  let terminal;
  const emit = (event) => {
    if (event.type === 'text_delta') deltas++;
  };
  const { events } = vendor;
  // Wall time and the process's CPU time of the timed parts: on a busy host the CPU time leaves out the time this
  // process waited for a core, which wall time counts (the ratios are taken on CPU time; wall time is shown beside).
  let ns = 0n;
  let cpuUs = 0;
  let cpu = process.cpuUsage();
  let start = now();
  const stop = () => {
    ns += now() - start;
    const spent = process.cpuUsage(cpu);
    cpuUs += spent.user + spent.system;
  };
  mapper.identify?.(events[0]);
  stop();
  for (let from = 0; from < events.length && terminal === undefined; from += BATCH) {
    const to = Math.min(events.length, from + BATCH);
    for (let i = from; i < to; i++) touch(events[i]); // off the clock: the SDK hands over a chunk it just parsed
    cpu = process.cpuUsage();
    start = now();
    for (let i = from; i < to && terminal === undefined; i++) terminal = mapper.map(events[i], emit);
    stop();
  }
  cpu = process.cpuUsage();
  start = now();
  terminal ??= mapper.end();
  stop();
  const ms = nsToMs(ns);
  const text = terminal.message.content.find((b) => b.type === 'text')?.text ?? '';
  if (deltas < N || !text.includes(pieces[N - 1])) throw new Error(`${vendor.name}: ${deltas} deltas, not the stream`);
  if (terminal.type !== 'done') throw new Error(`${vendor.name}: ended ${terminal.type}: ${terminal.message.errorMessage}`);
  return { wall: deltas / (ms / 1000), cpu: deltas / (cpuUs / 1e6) };
}

for (const vendor of vendors) once(vendor); // warm-up: every mapper optimised before any rep counts
const rates = Object.fromEntries(vendors.map((v) => [v.name, []]));
for (let rep = 0; rep < REPS; rep++) {
  for (let k = 0; k < vendors.length; k++) {
    const vendor = vendors[(rep + k) % vendors.length];
    rates[vendor.name].push(once(vendor));
  }
}
const medianOf = (name, key) => median(rates[name].map((rate) => rate[key]));
const base = { cpu: medianOf('anthropic', 'cpu'), wall: medianOf('anthropic', 'wall') };
console.log(`W2 through the wire mappers: ${N.toLocaleString('en')} text deltas of 1–16 characters, ${REPS} reps, medians`);
console.log('| mapper | deltas per CPU second | ratio to Anthropic | deltas/s (wall) | ratio (wall) |');
console.log('| --- | --- | --- | --- | --- |');
const fmt = (rate) => Math.round(rate).toLocaleString('en');
for (const vendor of vendors) {
  const cpu = medianOf(vendor.name, 'cpu');
  const wall = medianOf(vendor.name, 'wall');
  console.log(
    `| ${vendor.name} | ${fmt(cpu)} | ${(cpu / base.cpu).toFixed(2)}× | ${fmt(wall)} | ${(wall / base.wall).toFixed(2)}× |`,
  );
}
