// What wrappers cost per event and per call: cubepi alone, with 0, 1 and 3 pass-through layers (each one both a
// `wrapModelCall` and a `wrapToolCall` that only calls `next`). Public API only; imports the built package (../dist).
//   node wrapper-cost.mjs [--reps 7]
// Each measurement is its own process (repetitions interleaved across layer counts); printed as medians (min–max):
//   stream: one answer of 100,000 one-character deltas emitted in one synchronous burst, counted on events$ (deltas/s)
//   turns:  1,000 turns of one instant tool call each (µs per turn, after a 200-turn warm-up run in the same process)
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Observable } from "rxjs";
import { Agent, MessageAssembler, defineTool } from "cubepi";
import { cubepiZod } from "./adapters/cubepi.mjs";
import { median } from "./common.mjs";

const LAYERS = [0, 1, 3];
const args = process.argv.slice(2);
const opt = (k, d) => { const i = args.indexOf(k); return i >= 0 ? args[i + 1] : d; };

/** A provider answering from `script(callIndex)`: `{ tool: i }` (one tool call) or `{ deltas: n }`, in one burst. */
function burstProvider(script) {
  let call = 0;
  return {
    id: "burst",
    stream(model) {
      return new Observable((subscriber) => {
        const step = script(call++);
        const asm = new MessageAssembler({ provider: "burst", model: model.id });
        subscriber.next(asm.start());
        if (step.tool !== undefined) {
          subscriber.next(asm.startToolCall(`c${step.tool}`, "echo", { i: step.tool }));
          subscriber.next(asm.endToolCall(0));
          subscriber.next(asm.done("toolUse"));
        } else {
          subscriber.next(asm.startText());
          for (let i = 0; i < step.deltas; i++) subscriber.next(asm.textDelta(0, "x"));
          subscriber.next(asm.endText(0));
          subscriber.next(asm.done("stop"));
        }
        subscriber.complete();
      });
    },
  };
}

function passThrough(count) {
  return Array.from({ length: count }, (_, i) => ({
    name: `pass${i}`,
    wrapModelCall: (request, _ctx, next) => next(request),
    wrapToolCall: (call, _ctx, next) => next(call),
  }));
}

async function child(workload, layers) {
  const { z } = await cubepiZod();
  const echo = defineTool({ name: "echo", description: "echo", parameters: z.object({ i: z.number() }), execute: async (_id, { i }) => `ok ${i}` });
  const agentFor = (script) => new Agent({ provider: burstProvider(script), model: { id: "burst-1", provider: "burst" }, tools: [echo], middleware: passThrough(layers) });
  if (workload === "stream") {
    const run = async (N) => {
      const agent = agentFor(() => ({ deltas: N }));
      let count = 0;
      agent.events$.subscribe((ev) => { if (ev.type === "message_update" && ev.streamEvent.type === "text_delta") count++; });
      const t0 = process.hrtime.bigint();
      await agent.prompt("go");
      const ns = Number(process.hrtime.bigint() - t0);
      if (count !== N) throw new Error(`counted ${count} of ${N}`);
      return N / (ns / 1e9);
    };
    await run(10_000);
    return run(100_000);
  }
  const run = async (T) => {
    const agent = agentFor((k) => (k < T ? { tool: k } : { deltas: 1 }));
    const t0 = process.hrtime.bigint();
    await agent.prompt("go");
    const ns = Number(process.hrtime.bigint() - t0);
    if (agent.state.messages.length !== 2 * T + 2 || agent.state.errorMessage) throw new Error("run failed");
    return ns / 1e3 / (T + 1);
  };
  await run(200);
  return run(1000);
}

if (args[0] === "--child") {
  process.stdout.write(JSON.stringify(await child(args[1], Number(args[2]))) + "\n");
} else {
  const reps = Number(opt("--reps", "7"));
  const values = {};
  for (let rep = 0; rep < reps; rep++) {
    for (const workload of ["stream", "turns"]) {
      for (const layers of LAYERS) {
        const out = spawnSync(process.execPath, [fileURLToPath(import.meta.url), "--child", workload, String(layers)], { encoding: "utf8", timeout: 60_000 });
        if (out.status !== 0) throw new Error(`${workload} ${layers}: ${out.stderr || out.error}`);
        (values[`${workload} ${layers}`] ??= []).push(JSON.parse(out.stdout));
      }
    }
  }
  const fmt = (workload, v) => (workload === "stream" ? `${(v / 1e6).toFixed(2)} M deltas/s` : `${v.toFixed(1)} µs/turn`);
  console.log(`| workload | layers | median (min–max) over ${reps} processes | ÷ no layers |`);
  console.log("| --- | ---: | --- | ---: |");
  for (const workload of ["stream", "turns"]) {
    const base = median(values[`${workload} 0`]);
    for (const layers of LAYERS) {
      const v = values[`${workload} ${layers}`];
      const m = median(v);
      console.log(`| ${workload} | ${layers} | ${fmt(workload, m)} (${fmt(workload, Math.min(...v))}–${fmt(workload, Math.max(...v))}) | ${(m / base).toFixed(2)} |`);
    }
  }
}
