// Adapted from the workplace's bench-peers harness (../shared/bench-peers/bench/adapters/pi.mjs); adds W6 (fan-out).
// Peer A: @mariozechner/pi-agent-core (Agent class) + @mariozechner/pi-ai event streams.
// The model is a scripted in-process StreamFn (the documented Agent option `streamFn`),
// built on pi-ai's public createAssistantMessageEventStream(). Events follow the same
// shape pi-ai's own providers (and its `faux` provider) emit.
import fs from "node:fs";
import { Agent } from "@mariozechner/pi-agent-core";
import { createAssistantMessageEventStream, Type } from "@mariozechner/pi-ai";
import { markTool, now, sleep, startTicker, SRC, seedGroup, readIo, fileSize } from "../common.mjs";

export const name = "pi-agent-core";
export const w3Sizes = [100, 1000, 5000, 10000];
export const variants = { w2: [{ pacing: "burst16" }, { pacing: "micro" }], w3: [{ saver: "jsonl-append(harness)" }] };

const ZERO_USAGE = {
  input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};
const MODEL = {
  id: "scripted-1", name: "scripted", api: "scripted", provider: "scripted", baseUrl: "",
  reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 1e9, maxTokens: 1e6,
};
const base = (stopReason) => ({
  role: "assistant", content: [], api: MODEL.api, provider: MODEL.provider, model: MODEL.id,
  usage: ZERO_USAGE, stopReason, timestamp: Date.now(),
});

// --- scripted emitters -------------------------------------------------------
function emitToolCalls(s, calls) {
  const out = base("toolUse");
  s.push({ type: "start", partial: out });
  calls.forEach((c, idx) => {
    out.content.push({ type: "toolCall", id: c.id, name: c.name, arguments: {} });
    s.push({ type: "toolcall_start", contentIndex: idx, partial: out });
    const tc = { type: "toolCall", id: c.id, name: c.name, arguments: c.args };
    out.content[idx] = tc;
    s.push({ type: "toolcall_end", contentIndex: idx, toolCall: tc, partial: out });
  });
  s.push({ type: "done", reason: "toolUse", message: out });
  s.end(out);
}
async function emitText(s, deltas, delta, signal, pace) {
  const out = base("stop");
  s.push({ type: "start", partial: out });
  out.content.push({ type: "text", text: "" });
  s.push({ type: "text_start", contentIndex: 0, partial: out });
  for (let i = 0; i < deltas; i++) {
    if (deltas > 1) { const w = pace(i); if (w !== undefined) await w; }
    if (signal?.aborted) {
      const ab = { ...out, stopReason: "aborted", errorMessage: "Request was aborted" };
      s.push({ type: "error", reason: "aborted", error: ab });
      s.end(ab);
      return;
    }
    out.content[0].text += delta;
    s.push({ type: "text_delta", contentIndex: 0, delta, partial: out });
  }
  s.push({ type: "text_end", contentIndex: 0, content: out.content[0].text, partial: out });
  s.push({ type: "done", reason: "stop", message: out });
  s.end(out);
}
// Producer pacing for W2 (same definition in every adapter, see common.mjs PACERS).
import { PACERS } from "../common.mjs";
function emitTicker(s, signal) {
  const out = base("stop");
  s.push({ type: "start", partial: out });
  out.content.push({ type: "text", text: "" });
  s.push({ type: "text_start", contentIndex: 0, partial: out });
  const h = startTicker(1, () => {
    out.content[0].text += "x";
    s.push({ type: "text_delta", contentIndex: 0, delta: "x", partial: out });
  });
  const onAbort = () => {
    h.stop("signal");
    const ab = { ...out, stopReason: "aborted", errorMessage: "Request was aborted" };
    s.push({ type: "error", reason: "aborted", error: ab });
    s.end(ab);
  };
  if (signal) signal.addEventListener("abort", onAbort, { once: true });
}

/** script(callIndex, context) -> {tools:[...]} | {text, deltas} | {ticker:true} */
function scriptedStreamFn(script) {
  let call = 0;
  return (model, context, options) => {
    const s = createAssistantMessageEventStream();
    const step = script(call++, context);
    queueMicrotask(() => {
      if (step.tools) emitToolCalls(s, step.tools);
      else if (step.ticker) emitTicker(s, options?.signal);
      else void emitText(s, step.deltas ?? 1, step.text ?? "done", options?.signal, step.pace);
    });
    return s;
  };
}

function echoTool(delayMs = 0) {
  return {
    name: "echo", label: "echo", description: "returns a short string",
    parameters: Type.Object({ i: Type.Number() }),
    async execute(id, args) {
      markTool();
      if (delayMs) await sleep(delayMs);
      return { content: [{ type: "text", text: `ok ${args.i}` }], details: {} };
    },
  };
}

function makeAgent(script, tools, messages) {
  return new Agent({
    initialState: { systemPrompt: "bench", model: MODEL, tools, messages: messages ?? [] },
    streamFn: scriptedStreamFn(script),
  });
}

// --- workloads ---------------------------------------------------------------
export async function w1({ T }) {
  const agent = makeAgent(
    (k) => (k < T ? { tools: [{ id: `call_${k}`, name: "echo", args: { i: k } }] } : { text: "final answer" }),
    [echoTool()],
  );
  const t0 = now();
  await agent.prompt("go");
  const wall = now() - t0;
  const msgs = agent.state.messages.length;
  if (agent.state.errorMessage) throw new Error(agent.state.errorMessage);
  return { wallNs: wall, messages: msgs };
}

export async function w2({ N, pacing = "burst16" }) {
  const agent = makeAgent(() => ({ text: "x", deltas: N, pace: PACERS[pacing] }), []);
  let count = 0;
  agent.subscribe((ev) => {
    if (ev.type === "message_update" && ev.assistantMessageEvent.type === "text_delta") count++;
  });
  const t0 = now();
  await agent.prompt("go");
  return { wallNs: now() - t0, deltas: count };
}

export async function w4({ K, delayMs }) {
  const agent = makeAgent(
    (k) => (k === 0 ? { tools: Array.from({ length: K }, (_, j) => ({ id: `c${j}`, name: "echo", args: { i: j } })) } : { text: "done" }),
    [echoTool(delayMs)],
  );
  const t0 = now();
  await agent.prompt("go");
  return { wallNs: now() - t0, messages: agent.state.messages.length };
}

export async function w5({ abortAfterMs }) {
  const agent = makeAgent(() => ({ ticker: true }), []);
  let delivered = 0, first;
  const firstDelta = new Promise((r) => (first = r));
  agent.subscribe((ev) => {
    if (ev.type === "message_update" && ev.assistantMessageEvent.type === "text_delta" && ++delivered === 1) first();
  });
  const p = agent.prompt("go");
  await firstDelta;
  await sleep(abortAfterMs);
  SRC.abortAt = now();
  agent.abort();
  let outcome = "resolved";
  try { await p; } catch (e) { outcome = "rejected:" + (e?.name ?? e); }
  const settleNs = now() - SRC.abortAt;
  return { settleNs, outcome, delivered, stopReason: agent.state.messages.at(-1)?.stopReason };
}

// W3: pi-agent-core has no checkpointer. As a reference for "append-only" persistence,
// the harness appends each finished message as one JSONL line from a subscribe() listener
// (this persistence code is the harness's, not pi's).
function seedMessages(H) {
  const out = [];
  const ts = Date.now();
  for (let g = 0; out.length < H; g++) {
    const s = seedGroup(g);
    out.push({ role: "user", content: s.user, timestamp: ts });
    out.push({ ...base("toolUse"), content: [{ type: "toolCall", id: `seed_${g}`, name: "echo", arguments: s.toolArgs }] });
    out.push({ role: "toolResult", toolCallId: `seed_${g}`, toolName: "echo", content: [{ type: "text", text: s.toolResult }], details: {}, isError: false, timestamp: ts });
    out.push({ ...base("stop"), content: [{ type: "text", text: s.answer }] });
  }
  return out.slice(0, H);
}
export async function w3({ H, turns, dbPath }) {
  fs.writeFileSync(dbPath, seedMessages(H).map((m) => JSON.stringify(m)).join("\n") + "\n");
  let phase = 0;
  const agent = makeAgent(
    () => (phase++ % 2 === 0 ? { tools: [{ id: `t_${phase}`, name: "echo", args: { i: phase } }] } : { text: seedGroup(phase).answer }),
    [echoTool()],
    seedMessages(H),
  );
  const fd = fs.openSync(dbPath, "a");
  agent.subscribe((ev) => {
    if (ev.type === "message_end") fs.writeSync(fd, JSON.stringify(ev.message) + "\n");
  });
  const rows = [];
  for (let t = 0; t < turns + 1; t++) {
    const io0 = readIo(), sz0 = fileSize(dbPath), t0 = now();
    await agent.prompt(seedGroup(t).user);
    const ns = now() - t0, io1 = readIo(), sz1 = fileSize(dbPath);
    if (t === 0) continue; // warm-up turn
    rows.push({ ms: Number(ns) / 1e6, wchar: io1.wchar - io0.wchar, fileGrowth: sz1 - sz0, logicalBytes: sz1 - sz0, messagesAfter: agent.state.messages.length });
  }
  fs.closeSync(fd);
  return { rows };
}

// W6 fan-out (added for cubepi's issue 7): N agents in one process, 3 model calls each (two tool calls, then an answer),
// all prompts started together. pi has no checkpointer and its events carry no run id: the check is that every
// message event an agent's listener receives mentions only that agent's tag.
export async function w6({ N = 1000, turns = 3 }) {
  const tag = (i) => `agent-${i}`;
  const echo = {
    name: "echo", label: "echo", description: "returns its arguments",
    parameters: Type.Object({ agent: Type.String(), step: Type.Number() }),
    async execute(id, args) { return { content: [{ type: "text", text: `ok ${args.agent} ${args.step}` }], details: {} }; },
  };
  const belongs = (i, m) => {
    const hits = JSON.stringify(m).match(/agent-\d+/g) ?? [];
    return hits.length > 0 && hits.every((h) => h === tag(i));
  };
  let events = 0, misdelivered = 0;
  const agents = [], seen = [];
  for (let i = 0; i < N; i++) {
    const agent = makeAgent(
      (k) => (k < turns - 1 ? { tools: [{ id: `${tag(i)}_${k}`, name: "echo", args: { agent: tag(i), step: k } }] } : { text: `done ${tag(i)}` }),
      [echo],
    );
    const st = { turns: 0 };
    agent.subscribe((ev) => {
      events++;
      if ((ev.type === "message_start" || ev.type === "message_end") && !belongs(i, ev.message)) misdelivered++;
      else if (ev.type === "tool_execution_end" && !belongs(i, ev.result)) misdelivered++;
      else if (ev.type === "turn_end") st.turns++;
    });
    agents.push(agent);
    seen.push(st);
  }
  const t0 = now();
  await Promise.all(agents.map((a, i) => a.prompt(`go ${tag(i)}`)));
  const wallNs = now() - t0;
  let incomplete = 0, badThreads = 0;
  for (let i = 0; i < N; i++) {
    if (seen[i].turns !== turns || agents[i].state.errorMessage) incomplete++;
    const msgs = agents[i].state.messages;
    if (msgs.length !== 2 * turns || !msgs.every((m) => belongs(i, m))) badThreads++;
  }
  return { agents: N, turnsEach: turns, wallNs, events, misdelivered, incomplete, badThreads, checkpointer: "none (pi has no checkpointer)" };
}
