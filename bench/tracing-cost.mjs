// What tracing costs a run (issue 20), cubepi only, four configurations:
//   none      cubepi alone (nothing subscribes to events$)
//   listener  a no-op events$ listener: what any subscriber costs (the loop then builds and delivers every event)
//   noop      traceAgent with no OpenTelemetry SDK registered (the API's no-op tracer and meter)
//   sdk       traceAgent with the SDK recording into memory (BasicTracerProvider + SimpleSpanProcessor +
//             InMemorySpanExporter, a MeterProvider with a reader)
// Two workloads: turns (runs of 500 turns of one instant tool call each: µs per turn) and stream (one answer of 100,000
// one-character deltas in one synchronous burst: deltas/s). The configurations alternate in one process, warm, for
// `--rounds` rounds; the best round of each is printed (the machine this runs on is shared: the best is the least
// disturbed). Imports the built package (../dist) and the root's devDependencies: no `npm ci` in bench/ needed.
//   npm run build && node bench/tracing-cost.mjs [--rounds 12]
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

const args = process.argv.slice(2);
const opt = (k, d) => { const i = args.indexOf(k); return i >= 0 ? args[i + 1] : d; };
const rounds = Number(opt("--rounds", "12"));
const CONFIGS = ["none", "listener", "noop", "sdk"];
const TURNS = 500;
const DELTAS = 100_000;

const dist = new URL("../dist/src/", import.meta.url);
const cubepiRequire = createRequire(fileURLToPath(new URL("index.js", dist)));
const { Agent, MessageAssembler, defineTool } = await import(new URL("index.js", dist).href);
const { traceAgent } = await import(new URL("tracing/index.js", dist).href);
// The rxjs and zod cubepi itself resolves (one copy of each).
const { Observable } = await import(pathToFileURL(cubepiRequire.resolve("rxjs")).href);
const { z } = await import(pathToFileURL(cubepiRequire.resolve("zod")).href);
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = await import("@opentelemetry/sdk-trace-base");
const { MeterProvider, MetricReader } = await import("@opentelemetry/sdk-metrics");

class Reader extends MetricReader {
  onForceFlush() { return Promise.resolve(); }
  onShutdown() { return Promise.resolve(); }
}
const exporter = new InMemorySpanExporter();
const sdk = {
  tracer: new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer("bench"),
  meter: new MeterProvider({ readers: [new Reader()] }).getMeter("bench"),
};

const echo = defineTool({ name: "echo", description: "echo", parameters: z.object({ i: z.number() }), execute: async (_id, { i }) => `ok ${i}` });

/** `turns` calls with one tool call each, then an answer of `deltas` deltas, all in synchronous bursts. */
function burstProvider(turns, deltas) {
  let call = 0;
  return {
    id: "burst",
    stream(model) {
      return new Observable((subscriber) => {
        const k = call++;
        const asm = new MessageAssembler({ provider: "burst", model: model.id });
        subscriber.next(asm.start());
        if (k < turns) {
          subscriber.next(asm.startToolCall(`c${k}`, "echo", { i: k }));
          subscriber.next(asm.endToolCall(0));
          subscriber.next(asm.done("toolUse"));
        } else {
          subscriber.next(asm.startText());
          for (let i = 0; i < deltas; i++) subscriber.next(asm.textDelta(0, "x"));
          subscriber.next(asm.endText(0));
          subscriber.next(asm.done("stop"));
        }
        subscriber.complete();
      });
    },
  };
}

/** One run; its duration in seconds. */
async function once(config, turns, deltas) {
  exporter.reset();
  const agent = new Agent({ provider: burstProvider(turns, deltas), model: { id: "burst-1", provider: "burst" }, tools: [echo] });
  if (config === "listener") agent.events$.subscribe(() => {});
  else if (config === "noop") traceAgent(agent);
  else if (config === "sdk") traceAgent(agent, sdk);
  const t0 = process.hrtime.bigint();
  await agent.prompt("go");
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  if (agent.state.messages.length !== 2 * turns + 2 || agent.state.errorMessage) throw new Error("run failed");
  // Every turn's turn and chat spans, every tool call's, and the run's.
  if (config === "sdk" && exporter.getFinishedSpans().length !== 3 * turns + 3) throw new Error("spans missing");
  return seconds;
}

// All the turn runs first, then all the stream runs: a stream run right after a traced 500-turn run paid for its
// garbage.
const best = { turns: {}, stream: {} };
for (let round = 0; round < rounds; round++) {
  for (const config of CONFIGS) {
    const perTurn = (await once(config, TURNS, 1)) / (TURNS + 1);
    best.turns[config] = Math.min(best.turns[config] ?? Infinity, perTurn * 1e6);
  }
}
for (let round = 0; round < rounds; round++) {
  for (const config of CONFIGS) {
    const perSecond = DELTAS / (await once(config, 0, DELTAS));
    best.stream[config] = Math.max(best.stream[config] ?? 0, perSecond);
  }
}

const label = {
  none: "no tracing",
  listener: "a no-op events$ listener",
  noop: "traceAgent, no SDK (no-op tracer)",
  sdk: "traceAgent, SDK in memory",
};
console.log(`| configuration | turns: µs per turn | ÷ none | stream: M deltas/s | ÷ none |  (best of ${rounds} rounds)`);
console.log("| --- | ---: | ---: | ---: | ---: |");
for (const config of CONFIGS) {
  const t = best.turns[config];
  const s = best.stream[config];
  console.log(`| ${label[config]} | ${t.toFixed(1)} | ${(t / best.turns.none).toFixed(2)} | ${(s / 1e6).toFixed(2)} | ${(s / best.stream.none).toFixed(2)} |`);
}
