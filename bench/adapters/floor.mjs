// Adapted from the workplace's bench-peers harness (../shared/bench-peers/bench/adapters/floor.mjs).
// The floor: the same workloads done by a bare hand-written loop with no framework (no events, no validation,
// no copies beyond what the transcript needs). What no runtime can beat on this machine; a ratio target.
import { markTool, now, sleep, startTicker, SRC, PACERS } from "../common.mjs";

export const name = "floor";
export const variants = {};

export async function w1({ T }) {
  const messages = [{ role: "user", content: "go" }];
  const tool = async (i) => { markTool(); return `ok ${i}`; };
  const t0 = now();
  for (let k = 0; k <= T; k++) {
    await null; // one hop per model call, as any async model would need
    if (k < T) {
      const call = { id: `call_${k}`, name: "echo", arguments: { i: k } };
      messages.push({ role: "assistant", content: [{ type: "toolCall", ...call }] });
      messages.push({ role: "toolResult", toolCallId: call.id, content: [{ type: "text", text: await tool(k) }] });
    } else messages.push({ role: "assistant", content: [{ type: "text", text: "final answer" }] });
  }
  return { wallNs: now() - t0, messages: messages.length };
}

export async function w2({ N, pacing = "burst16" }) {
  let count = 0, text = "";
  const onDelta = (d) => { text += d; count++; };
  const pace = PACERS[pacing];
  const t0 = now();
  for (let i = 0; i < N; i++) { const w = pace(i); if (w !== undefined) await w; onDelta("x"); }
  return { wallNs: now() - t0, deltas: count };
}

export async function w4({ K, delayMs }) {
  const t0 = now();
  await null;
  await Promise.all(Array.from({ length: K }, async (_, j) => { markTool(); await sleep(delayMs); return `ok ${j}`; }));
  await null;
  return { wallNs: now() - t0, messages: K + 3 };
}

export async function w5({ abortAfterMs }) {
  const ac = new AbortController();
  let delivered = 0, first;
  const firstDelta = new Promise((r) => (first = r));
  let settle;
  const done = new Promise((r) => (settle = r));
  const h = startTicker(1, () => { if (++delivered === 1) first(); });
  ac.signal.addEventListener("abort", () => { h.stop("signal"); settle(); }, { once: true });
  await firstDelta;
  await sleep(abortAfterMs);
  SRC.abortAt = now();
  ac.abort();
  await done;
  return { settleNs: now() - SRC.abortAt, outcome: "resolved", delivered };
}
