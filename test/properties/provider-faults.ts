// Providers that break the stream contract, and what a run must still do with them (issue 36, item 5): the
// arbitraries of a fuzzed case, the faulty provider that plays one, and the checks of a run against oracles written
// without the code under test. Used by provider-boundary.property.test.ts.
import fc from 'fast-check';
import { Observable, type Subscription } from 'rxjs';
import { z } from 'zod';
import {
  Agent,
  defineTool,
  MemoryCheckpointer,
  MessageAssembler,
  retry,
  type AgentEvent,
  type AgentToolResult,
  type Message,
  type Model,
  type Provider,
  type ProviderErrorKind,
  type StreamEvent,
} from 'cubepi';
import { expectConsistentTranscript } from '../helpers.js';

// ---------------------------------------------------------------------------------------------------------------------
// A case.

/** A block of a scripted answer: text or thinking in pieces, or a tool call (its argument JSON cut once). */
export type Block =
  | { readonly kind: 'text' | 'thinking'; readonly pieces: readonly string[] }
  | { readonly kind: 'call'; readonly name: string; readonly args: Record<string, unknown>; readonly cut: number };

/** How a scripted answer ends when nothing breaks. */
export type Ending =
  | { readonly kind: 'done'; readonly stopReason: 'stop' | 'length' | 'toolUse' }
  | { readonly kind: 'error'; readonly errorKind: ProviderErrorKind };

/** What the provider does wrong on one call (`at` is an event position, taken modulo the stream's length). */
export type Fault =
  | { readonly kind: 'none' }
  | { readonly kind: 'drop' | 'duplicate' | 'swap'; readonly at: number }
  | { readonly kind: 'reindex'; readonly at: number; readonly to: number }
  | { readonly kind: 'second-terminal'; readonly second: 'same' | 'done' | 'error' | 'delta' }
  | { readonly kind: 'no-terminal' }
  | { readonly kind: 'non-event'; readonly at: number; readonly value: unknown }
  | { readonly kind: 'bad-partial'; readonly at: number; readonly value: unknown }
  | { readonly kind: 'bad-field'; readonly at: number }
  | { readonly kind: 'malformed-final'; readonly how: Malformation }
  | { readonly kind: 'error-channel'; readonly at: number }
  | { readonly kind: 'throw' }
  | { readonly kind: 'non-observable'; readonly value: unknown }
  | { readonly kind: 'never-end'; readonly at: number }
  | { readonly kind: 'hang-after-terminal' };

/** How the final message of a `malformed-final` fault is broken. */
export type Malformation = (typeof MALFORMATIONS)[number];
const MALFORMATIONS = [
  'null-block',
  'content-null',
  'unknown-stop-reason',
  'done-with-error-stop',
  'error-with-stop',
  'nan-usage',
  'no-usage',
  'user-role',
  'message-null',
  'text-not-string',
  'call-arguments-null',
  'call-id-number',
  'duplicate-call-ids',
  'bigint-argument',
  'cyclic-argument',
  'unknown-error-kind',
  'image-block',
  'timestamp-string',
] as const;

/** When the events of a call are emitted: all in `subscribe`, a microtask apart, or a macrotask apart. */
export type Pacing = 'sync' | 'micro' | 'macro';

/** One model call of a case. */
export interface Call {
  readonly blocks: readonly Block[];
  readonly ending: Ending;
  readonly fault: Fault;
  readonly pacing: Pacing;
}

/** What a tool of the case does. */
export type ToolKind = 'ok' | 'async' | 'throws' | 'macro' | 'invalid' | 'until-aborted';

/** How the run is cancelled, if it is: `abort()` or unsubscribing at its `atEvent`-th event, or a deadline. */
export type Cancel =
  | { readonly kind: 'none' }
  | { readonly kind: 'abort' | 'unsubscribe'; readonly atEvent: number }
  | { readonly kind: 'deadline'; readonly ms: number };

/** A fuzzed case: the provider's calls (after them it answers cleanly), the tools, a wrapper or not, a cancellation. */
export interface Case {
  readonly calls: readonly Call[];
  readonly tools: { readonly a: ToolKind; readonly b: ToolKind };
  readonly wrapped: boolean;
  readonly sequential: boolean;
  readonly cancel: Cancel;
}

const TOOL_NAMES = ['a', 'b', 'missing'] as const;

const piece = fc.string({ maxLength: 6 });
const block: fc.Arbitrary<Block> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('text' as const), pieces: fc.array(piece, { maxLength: 3 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('thinking' as const), pieces: fc.array(piece, { maxLength: 2 }) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('call' as const),
      name: fc.constantFrom(...TOOL_NAMES),
      args: fc.dictionary(fc.constantFrom('x', 'y', 'q'), fc.oneof(fc.integer(), fc.string({ maxLength: 4 })), {
        maxKeys: 2,
      }),
      cut: fc.nat(),
    }),
  },
);
const ending: fc.Arbitrary<Ending> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('done' as const),
      stopReason: fc.constantFrom('stop', 'toolUse', 'length'),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('error' as const),
      errorKind: fc.constantFrom<ProviderErrorKind>('unavailable', 'rate_limited', 'unknown', 'aborted'),
    }),
  },
);
/** Values that are not stream events. */
const notAnEvent = fc.constantFrom<unknown>(
  [],
  null,
  undefined,
  0,
  'text_delta',
  {},
  { type: 'text_delta' },
  { type: 'bogus', partial: {} },
  { type: 42 },
);
/** Values that are not an assistant snapshot. */
const notAPartial = fc.constantFrom<unknown>(
  undefined,
  null,
  [],
  {},
  { role: 'user', content: [] },
  { role: 'assistant' },
);
const at = fc.nat({ max: 40 });
const fault: fc.Arbitrary<Fault> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ kind: 'none' as const }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constantFrom('drop' as const, 'duplicate' as const, 'swap' as const), at }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('reindex' as const), at, to: fc.integer({ min: -2, max: 6 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('second-terminal' as const),
      second: fc.constantFrom('same' as const, 'done' as const, 'error' as const, 'delta' as const),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'no-terminal' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('non-event' as const), at, value: notAnEvent }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('bad-partial' as const), at, value: notAPartial }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('bad-field' as const), at }) },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('malformed-final' as const), how: fc.constantFrom(...MALFORMATIONS) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('error-channel' as const), at }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'throw' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('non-observable' as const),
      value: fc.constantFrom<unknown>(null, undefined, [], {}, 'stream', Promise.resolve(1)),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('never-end' as const), at }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'hang-after-terminal' as const }) },
);
const call: fc.Arbitrary<Call> = fc.record({
  blocks: fc.array(block, { maxLength: 4 }),
  ending,
  fault,
  pacing: fc.constantFrom<Pacing>('sync', 'micro', 'macro'),
});
const toolKind = fc.constantFrom<ToolKind>('ok', 'async', 'throws', 'macro', 'invalid', 'until-aborted');
const cancel: fc.Arbitrary<Cancel> = fc.oneof(
  { weight: 5, arbitrary: fc.constant({ kind: 'none' as const }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constantFrom('abort' as const, 'unsubscribe' as const),
      atEvent: fc.nat({ max: 60 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('deadline' as const), ms: fc.integer({ min: 1, max: 4 }) }) },
);

/** A fuzzed case. */
export const anyCase: fc.Arbitrary<Case> = fc.record({
  calls: fc.array(call, { minLength: 1, maxLength: 3 }),
  tools: fc.record({ a: toolKind, b: toolKind }),
  wrapped: fc.boolean(),
  sequential: fc.boolean(),
  cancel,
});

// ---------------------------------------------------------------------------------------------------------------------
// The faulty provider.

const PROVIDER = 'faulty';
const MODEL: Model = { id: 'faulty-1', provider: PROVIDER };
let callIds = 0;

/** The well-formed stream of `call`, built on the provider kit's assembler (so it is what a real provider emits). */
function wellFormed(call: Call): StreamEvent[] {
  const asm = new MessageAssembler({ provider: PROVIDER, model: MODEL.id, timestamp: 1 });
  const events: StreamEvent[] = [asm.start()];
  for (const b of call.blocks) {
    if (b.kind === 'call') {
      const id = `call_${++callIds}`;
      const json = JSON.stringify(b.args);
      const cut = b.cut % (json.length + 1);
      const i = asm.blockCount;
      events.push(asm.startToolCall(id, b.name));
      for (const part of [json.slice(0, cut), json.slice(cut)])
        if (part !== '') events.push(asm.toolCallDelta(i, part));
      events.push(asm.endToolCall(i));
    } else {
      const i = asm.blockCount;
      events.push(b.kind === 'text' ? asm.startText() : asm.startThinking());
      for (const p of b.pieces) events.push(b.kind === 'text' ? asm.textDelta(i, p) : asm.thinkingDelta(i, p));
      events.push(b.kind === 'text' ? asm.endText(i) : asm.endThinking(i));
    }
  }
  asm.setUsage({
    input: 3,
    output: 2,
    cacheRead: 0,
    cacheWrite: 0,
    reasoning: 0,
    totalTokens: 5,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  });
  const { ending } = call;
  events.push(ending.kind === 'done' ? asm.done(ending.stopReason) : asm.error(ending.errorKind, 'scripted failure'));
  return events;
}

/** The final message of `terminal` broken as `how` says (a terminal event object, or a non-object). */
function malformed(terminal: StreamEvent & { message: unknown }, how: Malformation): unknown {
  const message = terminal.message as Record<string, unknown> & { content: unknown[] };
  const withMessage = (m: unknown) => ({ ...terminal, message: m });
  const call = { type: 'toolCall', id: 'dup', name: 'a', arguments: {} };
  switch (how) {
    case 'null-block':
      return withMessage({ ...message, content: [...message.content, null] });
    case 'content-null':
      return withMessage({ ...message, content: null });
    case 'unknown-stop-reason':
      return withMessage({ ...message, stopReason: 'finished' });
    case 'done-with-error-stop':
      return { type: 'done', message: { ...message, stopReason: 'error', errorMessage: 'x' } };
    case 'error-with-stop':
      return { type: 'error', errorKind: 'unknown', message: { ...message, stopReason: 'stop' } };
    case 'nan-usage':
      return withMessage({ ...message, usage: { ...(message.usage as object), input: Number.NaN } });
    case 'no-usage':
      return withMessage({ ...message, usage: undefined });
    case 'user-role':
      return withMessage({ ...message, role: 'user' });
    case 'message-null':
      return withMessage(null);
    case 'text-not-string':
      return withMessage({ ...message, content: [{ type: 'text', text: 7 }] });
    case 'call-arguments-null':
      return withMessage({ ...message, content: [{ ...call, id: 'n1', arguments: null }] });
    case 'call-id-number':
      return withMessage({ ...message, content: [{ ...call, id: 5 }] });
    case 'duplicate-call-ids':
      return withMessage({ ...message, content: [call, { ...call, name: 'b' }] });
    case 'bigint-argument':
      return withMessage({ ...message, content: [{ ...call, id: 'big', arguments: { n: BigInt(1) } }] });
    case 'cyclic-argument': {
      const args: Record<string, unknown> = {};
      args.self = args;
      return withMessage({ ...message, content: [{ ...call, id: 'cyc', arguments: args }] });
    }
    case 'unknown-error-kind':
      return { type: 'error', errorKind: 'exploded', message: { ...message, stopReason: 'error', errorMessage: 'x' } };
    case 'image-block':
      return withMessage({ ...message, content: [{ type: 'image', data: 'AA==', mimeType: 'image/png' }] });
    case 'timestamp-string':
      return withMessage({ ...message, timestamp: 'now' });
  }
}

/** What a faulty call emits (before its fault's own behaviour: error channel, never ending). */
function faultyEvents(call: Call): unknown[] {
  const events: unknown[] = wellFormed(call);
  const n = events.length;
  const f = call.fault;
  const last = n - 1;
  switch (f.kind) {
    case 'drop':
      events.splice(f.at % n, 1);
      break;
    case 'duplicate':
      events.splice(f.at % n, 0, events[f.at % n]);
      break;
    case 'swap': {
      const i = f.at % Math.max(1, n - 1);
      [events[i], events[i + 1]] = [events[i + 1], events[i]];
      break;
    }
    case 'reindex': {
      const blockEvents = events.flatMap((e, i) => ('contentIndex' in (e as object) ? [i] : []));
      if (blockEvents.length > 0) {
        const i = blockEvents[f.at % blockEvents.length]!;
        events[i] = { ...(events[i] as object), contentIndex: f.to };
      }
      break;
    }
    case 'second-terminal': {
      const terminal = events[last] as StreamEvent & { message: object };
      const second =
        f.second === 'same'
          ? terminal
          : f.second === 'done'
            ? { type: 'done', message: { ...terminal.message, stopReason: 'stop' } }
            : f.second === 'error'
              ? { type: 'error', errorKind: 'unknown', message: { ...terminal.message, stopReason: 'error' } }
              : { type: 'text_delta', contentIndex: 0, delta: 'late', partial: terminal.message };
      events.push(second);
      break;
    }
    case 'no-terminal':
    case 'hang-after-terminal':
      if (f.kind === 'no-terminal') events.pop();
      break;
    case 'non-event':
      events.splice(f.at % n, 0, f.value);
      break;
    case 'bad-partial': {
      const i = f.at % last; // a non-terminal event
      events[i] = { ...(events[i] as object), partial: f.value };
      break;
    }
    case 'bad-field': {
      // A delta whose delta is not a string, or an end event without its content / call.
      const i = f.at % last;
      const e = events[i] as StreamEvent;
      if (e.type.endsWith('_delta')) events[i] = { ...e, delta: 5 };
      else if (e.type === 'text_end' || e.type === 'thinking_end') events[i] = { ...e, content: undefined };
      else if (e.type === 'toolcall_end') events[i] = { ...e, toolCall: null };
      else if (e.type === 'start') events[i] = { ...e, partial: 'snapshot' };
      else events[i] = { ...e, contentIndex: 'first' };
      break;
    }
    case 'malformed-final':
      events[last] = malformed(events[last] as StreamEvent & { message: unknown }, f.how);
      break;
  }
  return events;
}

/**
 * Whether `call` surely breaks the contract in a way the run must report as an error message (the turn's assistant
 * message then fails, unless the run was cancelled first). Drops, duplicates, swaps and re-indexing may or may not
 * leave a valid stream, so only the run's invariants are checked for them.
 */
function surelyBroken(call: Call): boolean {
  const f = call.fault;
  switch (f.kind) {
    case 'non-event':
    case 'bad-partial':
    case 'bad-field':
    case 'malformed-final':
    case 'throw':
    case 'non-observable':
    case 'no-terminal':
      return true;
    case 'second-terminal':
      return true;
    case 'error-channel':
      return true;
    default:
      return false;
  }
}

/** The provider of a case: its scripted calls (faults included), then clean answers that check what they are sent. */
class FaultyProvider implements Provider {
  readonly id = PROVIDER;
  calls = 0;
  /** Problems found in what the model was sent. */
  readonly sent: string[] = [];
  /** Called when a stream stops emitting for good (a `never-end` or `hang-after-terminal` fault). */
  onStall: () => void = () => undefined;
  constructor(private readonly script: readonly Call[]) {}

  stream(_model: Model, messages: Message[]): Observable<StreamEvent> {
    const index = this.calls++;
    const call = this.script[index];
    if (call === undefined) return this.clean(messages);
    if (call.fault.kind === 'throw') throw new Error('faulty provider threw');
    if (call.fault.kind === 'non-observable') return call.fault.value as Observable<StreamEvent>;
    const events = faultyEvents(call);
    const f = call.fault;
    return new Observable<StreamEvent>((subscriber) => {
      let closed = false;
      let i = 0;
      const errorAt = f.kind === 'error-channel' ? f.at % events.length : -1;
      const stopAt = f.kind === 'never-end' ? f.at % events.length : -1;
      const step = (): void => {
        while (!closed) {
          if (i === errorAt) return subscriber.error(new TypeError('faulty provider stream blew up'));
          if (i === stopAt || i === events.length) {
            if (stopAt >= 0 || f.kind === 'hang-after-terminal') return this.onStall();
            return subscriber.complete();
          }
          subscriber.next(events[i++] as StreamEvent);
          if (call.pacing === 'micro') return void Promise.resolve().then(step);
          if (call.pacing === 'macro') return void setImmediate(step);
        }
      };
      step();
      return () => {
        closed = true;
      };
    });
  }

  /** A clean answer ("ok"), after checking the messages it was sent are what a well-formed thread holds. */
  private clean(messages: readonly Message[]): Observable<StreamEvent> {
    for (const [i, message] of messages.entries()) {
      const problem = messageProblem(message);
      if (problem !== undefined) this.sent.push(`message ${i} sent to the model: ${problem}`);
    }
    try {
      expectConsistentTranscript(messages);
    } catch (error) {
      this.sent.push(`transcript sent to the model: ${(error as Error).message.split('\n')[0]}`);
    }
    const asm = new MessageAssembler({ provider: PROVIDER, model: MODEL.id });
    return new Observable<StreamEvent>((subscriber) => {
      subscriber.next(asm.start());
      subscriber.next(asm.startText());
      subscriber.next(asm.textDelta(0, 'ok'));
      subscriber.next(asm.endText(0));
      subscriber.next(asm.done('stop'));
      subscriber.complete();
    });
  }
}

/** A tool of kind `kind`. */
function tool(name: string, kind: ToolKind) {
  return defineTool({
    name,
    description: `tool ${name} (${kind})`,
    parameters: z.object({}).passthrough(),
    execute: (_id, _args, { signal }): AgentToolResult | Promise<AgentToolResult> => {
      const ok: AgentToolResult = { content: [{ type: 'text', text: `${name} ran` }] };
      switch (kind) {
        case 'ok':
          return ok;
        case 'async':
          return Promise.resolve(ok);
        case 'throws':
          throw new Error(`${name} failed`);
        case 'macro':
          return new Promise((resolve) => setImmediate(() => resolve(ok)));
        case 'invalid':
          return { content: [null] } as unknown as AgentToolResult;
        case 'until-aborted':
          // Ends when the run is cancelled, or after a macrotask when it is not (so an uncancelled run still ends).
          return new Promise((resolve, reject) => {
            const done = () => (signal.aborted ? reject(new Error('aborted', { cause: signal.reason })) : resolve(ok));
            signal.addEventListener('abort', done, { once: true });
            setImmediate(done);
          });
      }
    },
  });
}

// ---------------------------------------------------------------------------------------------------------------------
// Oracles, written without the code under test.

const amount = z.number().finite().nonnegative();
const usageSchema = z.object({
  input: amount,
  output: amount,
  cacheRead: amount,
  cacheWrite: amount,
  reasoning: amount,
  totalTokens: amount,
  cost: z.object({ input: amount, output: amount, cacheRead: amount, cacheWrite: amount, total: amount }),
});
const plainObject = z.custom<Record<string, unknown>>(
  (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
  'expected a plain object',
);
const text = z.object({ type: z.literal('text'), text: z.string(), signature: z.string().optional() });
const image = z.object({ type: z.literal('image'), data: z.string(), mimeType: z.string() });
const thinking = z.object({
  type: z.literal('thinking'),
  thinking: z.string(),
  signature: z.string().optional(),
  redacted: z.boolean().optional(),
});
const toolCall = z.object({
  type: z.literal('toolCall'),
  id: z.string(),
  name: z.string(),
  arguments: plainObject,
  invalidArguments: z.string().optional(),
});
const errorKind = z.enum([
  'rate_limited',
  'context_overflow',
  'auth',
  'unavailable',
  'bad_request',
  'timeout',
  'aborted',
  'unknown',
]);
const assistantSchema = z.object({
  role: z.literal('assistant'),
  content: z.array(z.union([text, thinking, toolCall])),
  stopReason: z.enum(['stop', 'length', 'toolUse', 'error', 'aborted']),
  errorMessage: z.string().optional(),
  errorKind: errorKind.optional(),
  retryAfterMs: amount.optional(),
  usage: usageSchema,
  provider: z.string(),
  model: z.string(),
  responseId: z.string().optional(),
  timestamp: z.number().finite(),
  metadata: plainObject.optional(),
});
const messageSchema = z.union([
  z.object({
    role: z.literal('user'),
    content: z.union([z.string(), z.array(z.union([text, image]))]),
    timestamp: z.number().finite(),
  }),
  assistantSchema,
  z.object({
    role: z.literal('toolResult'),
    toolCallId: z.string(),
    toolName: z.string(),
    content: z.array(z.union([text, image])),
    isError: z.boolean(),
    timestamp: z.number().finite(),
  }),
]);

/** What is wrong with `message` as a stored message, or undefined. */
export function messageProblem(message: unknown): string | undefined {
  const parsed = messageSchema.safeParse(message);
  if (!parsed.success) return `${JSON.stringify(parsed.error.issues[0])} in ${safeJson(message)}`;
  try {
    JSON.stringify(message);
  } catch (error) {
    return `not serialisable: ${(error as Error).message}`;
  }
  const m = message as Message;
  if (m.role === 'assistant') {
    const ids = m.content.flatMap((b) => (b.type === 'toolCall' ? [b.id] : []));
    if (new Set(ids).size !== ids.length) return `tool call ids repeat: ${ids.join(', ')}`;
  }
  return undefined;
}

function safeJson(value: unknown, limit = 200): string {
  try {
    return (
      JSON.stringify(value, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v))?.slice(0, limit) ?? 'undefined'
    );
  } catch {
    return String(value);
  }
}

const STREAM_TYPES = new Set([
  'start',
  'text_start',
  'text_delta',
  'text_end',
  'thinking_start',
  'thinking_delta',
  'thinking_end',
  'toolcall_start',
  'toolcall_delta',
  'toolcall_end',
]);

/**
 * Where a run's events break the event grammar (DESIGN §3, §5, docs/events.md): agent_start first and agent_end last;
 * turns that open and close in order; in a turn, messages one at a time (start, updates for an assistant message,
 * end, the same role); each update a stream event of a known type with its snapshot; each ended message well-formed;
 * tool executions that start and end inside their turn, once each.
 */
export function grammarProblems(events: readonly AgentEvent[]): string[] {
  const problems: string[] = [];
  let phase = 'before' as 'before' | 'run' | 'turn' | 'after';
  let open: Message | undefined;
  let turnIndex = 0;
  const tools = new Set<string>();
  const ended = new Set<string>();
  events.forEach((event, k) => {
    const where = `event ${k} (${event.type})`;
    if (phase === 'after') return void problems.push(`${where} after agent_end`);
    if (event.type === 'agent_start') {
      if (phase !== 'before') problems.push(`${where}: a second agent_start`);
      phase = 'run';
      return;
    }
    if (phase === 'before') return void problems.push(`${where} before agent_start`);
    switch (event.type) {
      case 'turn_start':
        if (phase !== 'run') problems.push(`${where}: a turn_start inside a turn`);
        if (event.turnIndex !== turnIndex)
          problems.push(`${where}: turnIndex ${event.turnIndex}, expected ${turnIndex}`);
        phase = 'turn';
        return;
      case 'turn_end':
        if (phase !== 'turn') problems.push(`${where}: turn_end outside a turn`);
        if (open !== undefined)
          problems.push(`${where}: turn_end with a message open (message_start without message_end)`);
        if (tools.size > 0) problems.push(`${where}: turn_end with tool executions open: ${[...tools].join(', ')}`);
        if (event.turnIndex !== turnIndex) problems.push(`${where}: turnIndex ${event.turnIndex}`);
        {
          const p = messageProblem(event.message);
          if (p !== undefined) problems.push(`${where}: its message: ${p}`);
        }
        turnIndex++;
        phase = 'run';
        open = undefined;
        return;
      case 'message_start':
        if (phase !== 'turn') problems.push(`${where} outside a turn`);
        if (open !== undefined) problems.push(`${where}: message_start while a message is open (no message_end)`);
        if (typeof event.message !== 'object' || event.message === null || typeof event.message.role !== 'string') {
          problems.push(`${where}: not a message: ${safeJson(event.message)}`);
        }
        open = event.message;
        return;
      case 'message_update': {
        if (open?.role !== 'assistant') problems.push(`${where}: an update outside an assistant message`);
        const m = event.message as unknown as { role?: unknown; content?: unknown } | null;
        if (typeof m !== 'object' || m === null || m.role !== 'assistant' || !Array.isArray(m.content)) {
          problems.push(`${where}: its snapshot is not an assistant message: ${safeJson(m)}`);
        }
        const s = event.streamEvent as unknown as { type?: unknown; partial?: unknown } | null;
        if (typeof s !== 'object' || s === null || !STREAM_TYPES.has(s.type as string) || s.partial !== event.message) {
          problems.push(`${where}: its stream event is not a stream event with that snapshot: ${safeJson(s)}`);
        }
        return;
      }
      case 'message_end': {
        if (open === undefined) problems.push(`${where}: message_end without message_start`);
        else if (open.role !== event.message?.role)
          problems.push(`${where}: ends a ${open.role} message as another role`);
        const p = messageProblem(event.message);
        if (p !== undefined) problems.push(`${where}: ${p}`);
        open = undefined;
        return;
      }
      case 'tool_execution_start':
        if (phase !== 'turn') problems.push(`${where} outside a turn`);
        if (tools.has(event.toolCallId) || ended.has(event.toolCallId))
          problems.push(`${where}: ${event.toolCallId} again`);
        tools.add(event.toolCallId);
        return;
      case 'tool_execution_end':
        if (!tools.delete(event.toolCallId)) problems.push(`${where}: ${event.toolCallId} was not running`);
        ended.add(event.toolCallId);
        return;
      case 'agent_end':
        if (phase !== 'run') problems.push(`${where}: agent_end inside a turn (turn_start without turn_end)`);
        if (open !== undefined) problems.push(`${where}: agent_end with a message open`);
        for (const [i, m] of event.messages.entries()) {
          const p = messageProblem(m);
          if (p !== undefined) problems.push(`${where}: messages[${i}]: ${p}`);
        }
        phase = 'after';
        return;
      default:
        if (phase !== 'turn' && event.type === 'model_attempt') problems.push(`${where} outside a turn`);
    }
  });
  if ((phase as string) !== 'after') problems.push(`the run ended without agent_end (last phase: ${phase})`);
  return problems;
}

// ---------------------------------------------------------------------------------------------------------------------
// Running a case.

/** What running a case found: problems, each starting with its category (`uncaught:`, `grammar:`, …). */
export interface CaseResult {
  readonly problems: string[];
}

const CONTRACT_ERROR =
  /^Provider faulty (broke its contract|stream failed|threw in stream\(\)|stream completed without a terminal event)/;

/** How long a case may take before it counts as a hang (a bound, not an assertion on timing: cases take ~1 ms). */
const HANG_MS = Number(process.env.FUZZ_PROVIDER_HANG_MS ?? 10_000);

/**
 * Runs `c`: a prompt on an Agent with a MemoryCheckpointer and the faulty provider (cancelled as the case says, or on
 * a stall), then a clean prompt, then a fresh Agent restoring the thread and prompting once more. Returns what broke.
 */
export async function runCase(c: Case): Promise<CaseResult> {
  const problems: string[] = [];
  const uncaught = (error: unknown) => problems.push(`uncaught: ${(error as Error)?.stack ?? String(error)}`);
  process.on('uncaughtException', uncaught);
  process.on('unhandledRejection', uncaught);
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      play(c, problems).catch(
        (error: unknown) => void problems.push(`harness: ${(error as Error)?.stack ?? String(error)}`),
      ),
      new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          problems.push(`hang: the case did not settle in ${HANG_MS} ms`);
          resolve();
        }, HANG_MS);
      }),
    ]);
    // Whatever a case left behind (a late rejection) shows before the listeners go.
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    clearTimeout(timer);
    process.off('uncaughtException', uncaught);
    process.off('unhandledRejection', uncaught);
  }
  return { problems };
}

async function play(c: Case, problems: string[]): Promise<void> {
  const provider = new FaultyProvider(c.calls);
  const checkpointer = new MemoryCheckpointer();
  const threadId = 'fuzz';
  const tools = [tool('a', c.tools.a), tool('b', c.tools.b)];
  const options = {
    provider,
    model: MODEL,
    tools,
    checkpointer,
    threadId,
    toolExecution: c.sequential ? ('sequential' as const) : ('parallel' as const),
    ...(c.wrapped ? { middleware: [retry({ maxAttempts: 2, backoff: { initialMs: 0, jitter: 0 } })] } : {}),
  };
  const agent = new Agent(options);
  const events: AgentEvent[] = [];
  let cancelled = false;
  const cancelNow = () => {
    cancelled = true;
    agent.abort('fuzz cancellation');
  };
  provider.onStall = () => void Promise.resolve().then(cancelNow);
  let subscription: Subscription | undefined;
  let faultyRun = true;
  agent.subscribe((event) => {
    if (!faultyRun) return;
    events.push(event);
    if (c.cancel.kind === 'abort' && events.length === c.cancel.atEvent) cancelNow();
    if (c.cancel.kind === 'unsubscribe' && events.length === c.cancel.atEvent && subscription !== undefined) {
      cancelled = true;
      subscription.unsubscribe();
    }
  });

  // The faulty run.
  try {
    if (c.cancel.kind === 'unsubscribe') {
      await new Promise<void>((resolve, reject) => {
        subscription = agent.prompt$('go').subscribe({ error: reject, complete: resolve });
        subscription.add(() => resolve());
      });
      await agent.waitForIdle();
    } else {
      const deadline = c.cancel.kind === 'deadline' ? { deadlineMs: c.cancel.ms } : {};
      if (c.cancel.kind === 'deadline') cancelled = true; // may fire
      await agent.prompt('go', deadline);
    }
  } catch (error) {
    problems.push(`rejected: the faulty run rejected with ${(error as Error)?.name}: ${(error as Error)?.message}`);
    await agent.waitForIdle();
  }
  faultyRun = false;
  for (const p of grammarProblems(events)) problems.push(`grammar: ${p}`);
  const stored = (await checkpointer.load(threadId))?.messages ?? [];
  for (const [i, m] of stored.entries()) {
    const p = messageProblem(m);
    if (p !== undefined) problems.push(`stored: message ${i}: ${p}`);
  }
  try {
    expectConsistentTranscript(stored);
  } catch (error) {
    problems.push(`unanswered: ${(error as Error).message.split('\n')[0]}`);
  }
  // A call that surely broke the contract ends its turn as a contract error (unless the run was cancelled first).
  if (!cancelled) {
    // The k-th model_attempt announces the provider's k-th call: its turn is the one that must fail.
    const attempts = events.flatMap((e) => (e.type === 'model_attempt' ? [e] : []));
    const broken = c.calls.slice(0, provider.calls).findIndex(surelyBroken);
    if (broken >= 0) {
      const turn = attempts[broken]?.turnIndex;
      const message = events.flatMap((e) => (e.type === 'turn_end' && e.turnIndex === turn ? [e.message] : []))[0];
      if (message?.stopReason !== 'error' || !CONTRACT_ERROR.test(message.errorMessage ?? '')) {
        problems.push(
          `undetected: call ${broken} broke the contract (${c.calls[broken]!.fault.kind}) but its turn ended with ${safeJson(message)}`,
        );
      }
    }
  }

  // A clean prompt on the same agent, then a fresh agent restoring the thread.
  const clean = async (who: Agent, label: string) => {
    try {
      await who.prompt('again');
      const last = who.state.messages.at(-1);
      if (last?.role !== 'assistant' || last.stopReason !== 'stop') {
        problems.push(`${label}: the clean prompt ended with ${safeJson(last)}`);
      }
    } catch (error) {
      problems.push(`${label}: the clean prompt rejected: ${(error as Error)?.message}`);
    }
  };
  provider.calls = Math.max(provider.calls, c.calls.length); // from now on, clean answers
  await clean(agent, 'clean');
  const before = (await checkpointer.load(threadId))?.messages ?? [];
  const restored = new Agent(options);
  await clean(restored, 'restore');
  const after = restored.state.messages;
  if (before.some((m, i) => safeJson(after[i], Infinity) !== safeJson(m, Infinity))) {
    problems.push('restore: the restored thread differs from the stored one');
  }
  for (const p of provider.sent) problems.push(`poisoned: ${p}`);
}
