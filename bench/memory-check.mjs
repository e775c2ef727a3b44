// Memory check of issue 7 (run with `node --expose-gc memory-check.mjs [--runs 10000] [--cancelled 1000]`).
//
// 1. Sequential runs: one Agent, a FauxProvider (cubepi/testing) whose factory always answers (a tool call to `echo`
//    when the last message is the user's, then the text "done"), an events$ listener attached the whole time, a
//    long-lived caller AbortSignal passed to every run. Runs alternate prompt() and prompt$(); reset() between runs
//    clears the transcript (which otherwise grows by design: 4 messages per run). Heap after GC is read after a
//    warm-up and after the runs: the end must be within 10% of the start.
// 2. Cancelled runs: a provider whose Observable counts its active subscriptions and streams one delta per ms from a
//    timer (stopped only by its teardown or the request signal); a tool that never settles and counts its pending
//    calls. Each case cancels mid-stream or mid-tool, by agent.abort() or by unsubscribing prompt$, then checks:
//    no provider subscription active, no timer left, no delta produced after the cancel, the tool's signal fired,
//    no abort listener left on the caller's signal, no Node timer/handle left over (process.getActiveResourcesInfo).
//    Every case is repeated; heap after GC is compared before/after the repeats too.
//
// Prints a human summary on stderr and one line `RESULT {json}` on stdout (run.mjs puts it in RESULTS.md).
// Public API only: cubepi, cubepi/testing (rxjs for the counting provider, as docs/providers.md does).
import { getEventListeners } from "node:events";
import { lastValueFrom, Observable } from "rxjs";
import { z } from "zod";
import { Agent, MessageAssembler, defineTool } from "cubepi";
import { FauxProvider, fauxMessage, fauxToolCall } from "cubepi/testing";

if (typeof globalThis.gc !== "function") {
  console.error("run with: node --expose-gc memory-check.mjs");
  process.exit(2);
}
const args = process.argv.slice(2);
const opt = (k, d) => { const i = args.indexOf(k); return i >= 0 ? Number(args[i + 1]) : d; };
const RUNS = opt("--runs", 10000);
const CANCELLED = opt("--cancelled", 1000);
const WARMUP = Math.min(1000, Math.max(100, RUNS / 10));
const MB = 2 ** 20;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function heapAfterGc() {
  // Several passes with a macrotask between them: finalisers and weak references get their turn.
  for (let k = 0; k < 4; k++) { globalThis.gc(); await sleep(10); }
  return process.memoryUsage().heapUsed;
}
const resourceCounts = () => {
  const c = {};
  for (const r of process.getActiveResourcesInfo()) c[r] = (c[r] ?? 0) + 1;
  return c;
};
const resourceDiff = (a, b) => Object.entries(b).filter(([k, n]) => n > (a[k] ?? 0)).map(([k, n]) => `${k}+${n - (a[k] ?? 0)}`);

// --- 1. sequential runs ------------------------------------------------------------------------------------------
async function sequential() {
  const echo = defineTool({
    name: "echo", description: "returns its argument", parameters: z.object({ i: z.number() }),
    execute: async (_id, { i }) => `ok ${i}`,
  });
  let k = 0;
  const answer = (messages) => {
    const last = messages.at(-1);
    return last.role === "user" ? fauxMessage([fauxToolCall("echo", { i: k })]) : fauxMessage("done");
  };
  const faux = new FauxProvider();
  const agent = new Agent({ provider: faux, model: "faux", tools: [echo] });
  let events = 0;
  agent.subscribe(() => void events++);
  const caller = new AbortController();
  const once = async () => {
    faux.setResponses([answer, answer]);
    if (k % 2 === 0) await agent.prompt(`run ${k}`, { signal: caller.signal });
    else await lastValueFrom(agent.prompt$(`run ${k}`, { signal: caller.signal }));
    if (agent.state.messages.length !== 4 || agent.state.errorMessage) throw new Error(`run ${k} failed: ${agent.state.errorMessage}`);
    agent.reset();
    k++;
  };
  for (let i = 0; i < WARMUP; i++) await once();
  const res0 = resourceCounts();
  const start = await heapAfterGc();
  // Heap after GC every quarter of the runs, to show a trend, not just two points (GC time is not counted).
  const trendMB = [start / MB];
  let ms = 0;
  for (let q = 1; q <= 4; q++) {
    const t0 = performance.now();
    for (let i = Math.floor(((q - 1) * RUNS) / 4); i < Math.floor((q * RUNS) / 4); i++) await once();
    ms += performance.now() - t0;
    if (q < 4) trendMB.push((await heapAfterGc()) / MB);
  }
  const end = await heapAfterGc();
  trendMB.push(end / MB);
  return {
    runs: RUNS, warmupRuns: WARMUP, msPerRun: ms / RUNS, eventsPerRun: events / (RUNS + WARMUP),
    heapStartMB: start / MB, heapEndMB: end / MB, heapRatio: end / start, heapTrendMB: trendMB,
    callerSignalListeners: getEventListeners(caller.signal, "abort").length,
    resourcesLeft: resourceDiff(res0, resourceCounts()),
  };
}

// --- 2. cancelled runs -------------------------------------------------------------------------------------------
const live = { subscriptions: 0, timers: 0, afterCancel: 0, cancelled: false, toolsPending: 0, toolSignalsFired: 0, toolCalls: 0 };

/** Streams "x" every ms forever (or answers with a tool call when asked to); counts its subscriptions and timers. */
function countingProvider(mode) {
  return {
    id: "counting",
    stream(model, messages, request = {}) {
      return new Observable((subscriber) => {
        live.subscriptions++;
        const asm = new MessageAssembler({ provider: "counting", model: model.id });
        const signal = request.options?.signal;
        let timer;
        const stop = () => { if (timer !== undefined) { clearInterval(timer); timer = undefined; live.timers--; } };
        const onAbort = () => { stop(); subscriber.next(asm.error("aborted", "Request aborted")); subscriber.complete(); };
        signal?.addEventListener("abort", onAbort, { once: true });
        subscriber.next(asm.start());
        if (mode === "tool" && messages.at(-1).role === "user") {
          subscriber.next(asm.startToolCall("hang_1", "hang"));
          subscriber.next(asm.toolCallDelta(0, "{}"));
          subscriber.next(asm.endToolCall(0));
          subscriber.next(asm.done("toolUse"));
          subscriber.complete();
        } else {
          subscriber.next(asm.startText());
          live.timers++;
          timer = setInterval(() => {
            if (live.cancelled) live.afterCancel++;
            subscriber.next(asm.textDelta(0, "x"));
          }, 1);
        }
        return () => {
          live.subscriptions--;
          stop();
          signal?.removeEventListener("abort", onAbort);
        };
      });
    },
  };
}

const hang = defineTool({
  name: "hang", description: "never settles; counts its calls and whether its signal fired", parameters: z.object({}),
  execute: (_id, _args, { signal }) => {
    live.toolCalls++;
    live.toolsPending++;
    signal.addEventListener("abort", () => { live.toolSignalsFired++; live.toolsPending--; }, { once: true });
    return new Promise(() => {}); // never settles: cubepi must not wait for it
  },
});

async function cancelOnce(agent, how, waitMs, caller) {
  live.cancelled = false;
  let firstDelta;
  const started = new Promise((r) => (firstDelta = r));
  const off = agent.subscribe((ev) => {
    if ((ev.type === "message_update" && ev.streamEvent.type === "text_delta") || ev.type === "tool_execution_start") firstDelta();
  });
  let done;
  if (how === "abort") {
    done = agent.prompt("go", { signal: caller.signal });
    await started;
    await sleep(waitMs);
    live.cancelled = true;
    agent.abort();
    await done;
  } else {
    const sub = agent.prompt$("go", { signal: caller.signal }).subscribe();
    await started;
    await sleep(waitMs);
    live.cancelled = true;
    sub.unsubscribe();
    await agent.waitForIdle();
  }
  off();
  await sleep(3); // give a leaked producer time to tick
  const last = agent.state.messages.at(-1);
  agent.reset();
  return last?.stopReason;
}

async function cancelled() {
  const caller = new AbortController();
  const cases = [];
  for (const [mode, how] of [["stream", "abort"], ["stream", "unsubscribe"], ["tool", "abort"], ["tool", "unsubscribe"]]) {
    const agent = new Agent({ provider: countingProvider(mode), model: "counting", tools: [hang] });
    Object.assign(live, { afterCancel: 0, toolCalls: 0, toolSignalsFired: 0 });
    for (let i = 0; i < 20; i++) await cancelOnce(agent, how, 2, caller); // warm-up
    const res0 = resourceCounts();
    const start = await heapAfterGc();
    Object.assign(live, { afterCancel: 0, toolCalls: 0, toolSignalsFired: 0 });
    const stopReasons = new Set();
    const reps = CANCELLED;
    for (let i = 0; i < reps; i++) stopReasons.add(await cancelOnce(agent, how, i % 3, caller));
    const end = await heapAfterGc();
    cases.push({
      case: `${how} mid-${mode}`, runs: reps, stopReasons: [...stopReasons],
      providerSubscriptionsLeft: live.subscriptions, timersLeft: live.timers, deltasAfterCancel: live.afterCancel,
      toolCalls: live.toolCalls, toolSignalsFired: live.toolSignalsFired, toolsPending: live.toolsPending,
      callerSignalListeners: getEventListeners(caller.signal, "abort").length,
      resourcesLeft: resourceDiff(res0, resourceCounts()),
      heapStartMB: start / MB, heapEndMB: end / MB, heapRatio: end / start,
    });
  }
  return cases;
}

const seq = await sequential();
const can = await cancelled();
const ok =
  seq.heapRatio <= 1.1 && seq.callerSignalListeners === 0 && seq.resourcesLeft.length === 0 &&
  can.every((c) => c.providerSubscriptionsLeft === 0 && c.timersLeft === 0 && c.deltasAfterCancel === 0 && c.toolsPending === 0 &&
    c.toolSignalsFired === c.toolCalls && c.callerSignalListeners === 0 && c.resourcesLeft.length === 0 && c.stopReasons.every((s) => s === "aborted"));
const out = { sequential: seq, cancelled: can, ok };
console.error(JSON.stringify(out, null, 2));
console.log("RESULT " + JSON.stringify(out));
process.exit(0);
