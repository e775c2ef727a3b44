// Adapted from the workplace's bench-peers harness (../shared/bench-peers/bench/adapters/aisdk.mjs).
// Peer C: Vercel AI SDK `ai` (streamText + tools + stopWhen).
// The model is a minimal object implementing the public LanguageModelV3 spec
// (specificationVersion "v3", doStream returning a ReadableStream of V3 stream parts).
// ai/test's MockLanguageModelV3 is not used for the timed runs because it records
// every call's full prompt in doStreamCalls (O(T^2) memory over a T-step run).
import { streamText, tool, jsonSchema, stepCountIs } from "ai";
import { markTool, now, sleep, startTicker, SRC, PACERS } from "../common.mjs";

export const name = "ai-sdk";

const USAGE = {
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 },
};
const finish = (unified) => ({ type: "finish", finishReason: { unified, raw: unified }, usage: USAGE });

function partsStream(step, abortSignal) {
  if (step.tools) {
    const parts = [{ type: "stream-start", warnings: [] }];
    for (const c of step.tools) parts.push({ type: "tool-call", toolCallId: c.id, toolName: c.name, input: JSON.stringify(c.args) });
    parts.push(finish("tool-calls"));
    return new ReadableStream({ start(ctl) { for (const p of parts) ctl.enqueue(p); ctl.close(); } });
  }
  if (step.ticker) {
    let h;
    return new ReadableStream({
      start(ctl) {
        ctl.enqueue({ type: "stream-start", warnings: [] });
        ctl.enqueue({ type: "text-start", id: "t0" });
        h = startTicker(1, () => { try { ctl.enqueue({ type: "text-delta", id: "t0", delta: "x" }); } catch {} });
        abortSignal?.addEventListener("abort", () => { h.stop("signal"); try { ctl.error(new DOMException("aborted", "AbortError")); } catch {} }, { once: true });
      },
      cancel() { h?.stop("consumer-cancel"); },
    });
  }
  // text, N deltas, paced like the other adapters (pull-based: one part per pull)
  const N = step.deltas ?? 1, d = step.text ?? "done";
  const pace = PACERS[step.pacing ?? "burst16"];
  let i = -2;
  return new ReadableStream({
    async pull(ctl) {
      if (i === -2) { ctl.enqueue({ type: "stream-start", warnings: [] }); ctl.enqueue({ type: "text-start", id: "t0" }); i = 0; return; }
      if (i < N) { const w = N > 1 ? pace(i) : undefined; if (w !== undefined) await w; ctl.enqueue({ type: "text-delta", id: "t0", delta: d }); i++; return; }
      ctl.enqueue({ type: "text-end", id: "t0" });
      ctl.enqueue(finish("stop"));
      ctl.close();
    },
  }, { highWaterMark: 0 });
}

function scriptedModel(script) {
  let call = 0;
  return {
    specificationVersion: "v3", provider: "scripted", modelId: "scripted-1", supportedUrls: {},
    async doGenerate() { throw new Error("doGenerate not scripted"); },
    async doStream(options) {
      const step = script(call++, options);
      return { stream: partsStream(step, options.abortSignal) };
    },
  };
}

function echoTool(delayMs = 0) {
  return tool({
    description: "returns a short string",
    inputSchema: jsonSchema({ type: "object", properties: { i: { type: "number" } }, required: ["i"] }),
    execute: async ({ i }) => { markTool(); if (delayMs) await sleep(delayMs); return `ok ${i}`; },
  });
}

export async function w1({ T }) {
  const model = scriptedModel((k) => (k < T ? { tools: [{ id: `call_${k}`, name: "echo", args: { i: k } }] } : { text: "final answer" }));
  const t0 = now();
  const r = streamText({ model, tools: { echo: echoTool() }, prompt: "go", stopWhen: stepCountIs(T + 5) });
  await r.consumeStream();
  const steps = (await r.steps).length;
  const text = await r.text;
  if (text !== "final answer") throw new Error("unexpected final text " + text);
  return { wallNs: now() - t0, steps };
}

export async function w2({ N, pacing = "burst16" }) {
  const model = scriptedModel(() => ({ text: "x", deltas: N, pacing }));
  let count = 0;
  const t0 = now();
  const r = streamText({ model, prompt: "go" });
  for await (const part of r.fullStream) if (part.type === "text-delta") count++;
  return { wallNs: now() - t0, deltas: count };
}

export async function w4({ K, delayMs }) {
  const model = scriptedModel((k) => (k === 0 ? { tools: Array.from({ length: K }, (_, j) => ({ id: `c${j}`, name: "echo", args: { i: j } })) } : { text: "done" }));
  const t0 = now();
  const r = streamText({ model, tools: { echo: echoTool(delayMs) }, prompt: "go", stopWhen: stepCountIs(5) });
  await r.consumeStream();
  const steps = (await r.steps).length;
  return { wallNs: now() - t0, steps };
}

export async function w5({ abortAfterMs }) {
  const model = scriptedModel(() => ({ ticker: true }));
  const ac = new AbortController();
  let delivered = 0, first, abortPart = false;
  const firstDelta = new Promise((r) => (first = r));
  const r = streamText({ model, prompt: "go", abortSignal: ac.signal });
  const run = (async () => {
    for await (const part of r.fullStream) {
      if (part.type === "text-delta" && ++delivered === 1) first();
      if (part.type === "abort") abortPart = true;
    }
  })();
  run.catch(() => {});
  await Promise.race([firstDelta, run]);
  await sleep(abortAfterMs);
  SRC.abortAt = now();
  ac.abort();
  let outcome = "resolved";
  try { await run; } catch (e) { outcome = "rejected:" + (e?.name ?? e); }
  return { settleNs: now() - SRC.abortAt, outcome, delivered, abortPart };
}
