/**
 * The block assembler every provider shares: wire events in, cubepi stream events out.
 * @module
 */
import type { AssistantContent, ThinkingContent, ToolCall } from '../types/content.js';
import type { AssistantMessage, MessageMetadata, ProviderErrorKind, StopReason } from '../types/messages.js';
import type {
  DoneEvent,
  ErrorEvent,
  StartEvent,
  TextDeltaEvent,
  TextEndEvent,
  TextStartEvent,
  ThinkingDeltaEvent,
  ThinkingEndEvent,
  ThinkingStartEvent,
  ToolCallDeltaEvent,
  ToolCallEndEvent,
  ToolCallStartEvent,
} from '../types/stream-events.js';
import { InvalidInputError } from '../types/errors.js';
import { EMPTY_USAGE, type Usage } from '../types/usage.js';
import { parsePartialJson, parseToolArguments } from './partial-json.js';

/** Who answers: stamped on every snapshot. */
export interface MessageAssemblerInit {
  /** The provider id stamped as `provider` on every snapshot (the `Provider.id` of the provider using it). */
  readonly provider: string;
  /** The model id requested; {@link MessageAssembler.setModel} replaces it when the API reports a more precise one. */
  readonly model: string;
  /** The message's `timestamp` (ms since the epoch); defaults to `Date.now()` at construction. */
  readonly timestamp?: number | undefined;
  /** Caller data copied as `metadata` onto every snapshot and the final message; left out when absent. */
  readonly metadata?: MessageMetadata | undefined;
}

/** Argument texts up to this length get a fresh preview on every delta. */
const PREVIEW_EVERY_DELTA_UP_TO = 4096;
/** Past that, a preview is parsed again once the text has grown by 1/this of its length since the last one. */
const PREVIEW_GROWTH_DIVISOR = 16;

/** The argument text of an open tool call, and its length when its preview was last parsed. */
interface OpenArguments {
  raw: string;
  previewedLength: number;
}

/**
 * Builds an assistant message block by block and returns the stream event for each step. Providers only map their
 * wire events onto these calls; the assembler owns the snapshots and the argument parsing, so every provider streams
 * the same way.
 *
 * Every event's `partial` is a new immutable snapshot that shares unchanged blocks with the previous one: one message
 * literal, one copy of the content array and one new block, O(number of blocks). Tool-call arguments are parsed
 * tolerantly for previews ({@link toolCallDelta}) and strictly at {@link endToolCall}.
 *
 * @example
 * const asm = new MessageAssembler({ provider: 'acme', model: 'acme-1' });
 * subscriber.next(asm.start());
 * const i = asm.blockCount; subscriber.next(asm.startText());
 * subscriber.next(asm.textDelta(i, 'Hello'));
 * subscriber.next(asm.endText(i));
 * subscriber.next(asm.done('stop'));
 */
export class MessageAssembler {
  private blocks: AssistantContent[] = [];
  /** The argument text of tool calls still open, by content index (made at the first streamed call). */
  private openArguments: Map<number, OpenArguments> | undefined;
  private appendsSinceFlatten = 0;
  private usage: Usage = EMPTY_USAGE;
  private responseId: string | undefined;
  private model: string;
  private readonly provider: string;
  private readonly timestamp: number;
  private readonly metadata: MessageMetadata | undefined;
  private current: AssistantMessage;

  constructor(init: MessageAssemblerInit) {
    this.provider = init.provider;
    this.model = init.model;
    this.timestamp = init.timestamp ?? Date.now();
    this.metadata = init.metadata;
    this.current = this.snapshot('stop');
  }

  /** The latest snapshot (its `stopReason` is provisional until the terminal event). */
  get partial(): AssistantMessage {
    return this.current;
  }

  /** The number of blocks so far: the `contentIndex` the next `start*` call will use. */
  get blockCount(): number {
    return this.blocks.length;
  }

  /** Sets the provider's response id (kept on every later snapshot). */
  setResponseId(id: string): void {
    this.responseId = id;
  }

  /** Sets the model that actually answered, when the API reports a more precise id than the one requested. */
  setModel(model: string): void {
    this.model = model;
  }

  /** Sets the usage reported so far (providers report it at the start, the end, or both). */
  setUsage(usage: Usage): void {
    this.usage = usage;
  }

  /** The `start` event. */
  start(): StartEvent {
    return { type: 'start', partial: this.refresh() };
  }

  /** Opens a text block at index {@link blockCount}. */
  startText(): TextStartEvent {
    const contentIndex = this.push({ type: 'text', text: '' });
    return { type: 'text_start', contentIndex, partial: this.current };
  }

  /** Appends text to the block at `contentIndex`. */
  textDelta(contentIndex: number, delta: string): TextDeltaEvent {
    // The most frequent call of a stream, written out in one function (`blockAt`, `append` and `replace` inlined): a
    // stream's first thousands of deltas run before V8 optimises them, where every call costs (this was six).
    const blocks = this.blocks;
    const block = blocks[contentIndex];
    if (block === undefined || block.type !== 'text') return noBlock(contentIndex, 'text');
    const text = block.text + delta;
    const since = ++this.appendsSinceFlatten;
    if (since >= 256 && since * 16 >= text.length) this.flatten(text);
    const copy = blocks.slice();
    copy[contentIndex] =
      block.signature === undefined ? { type: 'text', text } : { type: 'text', text, signature: block.signature };
    this.blocks = copy;
    const partial = this.snapshot('stop');
    this.current = partial;
    return { type: 'text_delta', contentIndex, delta, partial };
  }

  /**
   * Sets the provider's replay data on the text block at `contentIndex` (see `TextContent.signature`). No event: it
   * shows on the next snapshot and on the final message.
   */
  setTextSignature(contentIndex: number, signature: string): void {
    const block = this.blockAt(contentIndex, 'text');
    this.replace(contentIndex, { type: 'text', text: block.text, signature });
  }

  /** Closes the text block at `contentIndex`. */
  endText(contentIndex: number): TextEndEvent {
    const block = this.blockAt(contentIndex, 'text');
    return { type: 'text_end', contentIndex, content: block.text, partial: this.current };
  }

  /**
   * Opens a thinking block. A redacted block (opaque, encrypted reasoning) arrives whole: pass its data as `thinking`
   * and close it at once.
   */
  startThinking(options?: { redacted?: boolean; thinking?: string; signature?: string }): ThinkingStartEvent {
    const block: ThinkingContent = {
      type: 'thinking',
      thinking: options?.thinking ?? '',
      ...(options?.signature !== undefined ? { signature: options.signature } : {}),
      ...(options?.redacted ? { redacted: true } : {}),
    };
    const contentIndex = this.push(block);
    return { type: 'thinking_start', contentIndex, partial: this.current };
  }

  /** Appends thinking text to the block at `contentIndex`. */
  thinkingDelta(contentIndex: number, delta: string): ThinkingDeltaEvent {
    const block = this.blockAt(contentIndex, 'thinking');
    this.replace(contentIndex, { ...block, thinking: this.append(block.thinking, delta) });
    return { type: 'thinking_delta', contentIndex, delta, partial: this.current };
  }

  /** Appends to the signature of the thinking block at `contentIndex` (no event: it shows at `thinking_end`). */
  appendSignature(contentIndex: number, signature: string): void {
    const block = this.blockAt(contentIndex, 'thinking');
    this.replace(contentIndex, { ...block, signature: (block.signature ?? '') + signature });
  }

  /** Closes the thinking block at `contentIndex`. */
  endThinking(contentIndex: number): ThinkingEndEvent {
    const block = this.blockAt(contentIndex, 'thinking');
    return { type: 'thinking_end', contentIndex, content: block.thinking, partial: this.current };
  }

  /**
   * Opens a tool call; its arguments arrive as JSON fragments through {@link toolCallDelta}.
   *
   * When the API delivers a call whole, with its arguments already an object (not JSON text to stream), pass them as
   * `args`: the call needs no deltas, and {@link endToolCall} closes it with exactly these arguments (no parse). The
   * assembler keeps the object: do not change it afterwards. Throws `InvalidInputError` when `args` is not a plain
   * object.
   */
  startToolCall(id: string, name: string, args?: Record<string, unknown>): ToolCallStartEvent {
    if (args === undefined) {
      const contentIndex = this.push({ type: 'toolCall', id, name, arguments: {} });
      (this.openArguments ??= new Map<number, OpenArguments>()).set(contentIndex, { raw: '', previewedLength: 0 });
      return { type: 'toolcall_start', contentIndex, partial: this.current };
    }
    if (!isRecord(args)) {
      throw new InvalidInputError(`MessageAssembler.startToolCall: the arguments of ${name} must be a plain object`);
    }
    const contentIndex = this.push({ type: 'toolCall', id, name, arguments: args });
    return { type: 'toolcall_start', contentIndex, partial: this.current };
  }

  /**
   * Appends a fragment of argument JSON; the snapshot's `arguments` is a preview: a tolerant parse of the text so far
   * (the previous preview is kept while the text parses to no object).
   *
   * A preview parse reads the whole text, so it is not done on every delta of a long text: up to 4,096 characters
   * each delta gets a fresh preview; past that, the preview is refreshed every ~1/16 of growth (when the text has
   * grown by 1/16 of its length since the last preview parse) and the snapshots in between keep the previous
   * `arguments`. Parsing on every delta costs O(n²) for a text of n characters, which long arguments streamed in small
   * deltas make felt; this way it costs O(n log n). The strict parse at {@link endToolCall} always reads the whole
   * text.
   */
  toolCallDelta(contentIndex: number, delta: string): ToolCallDeltaEvent {
    const block = this.blockAt(contentIndex, 'toolCall');
    const opened = (this.openArguments ??= new Map<number, OpenArguments>());
    let open = opened.get(contentIndex);
    if (open === undefined) {
      open = { raw: '', previewedLength: 0 };
      opened.set(contentIndex, open);
    }
    const raw = this.append(open.raw, delta);
    open.raw = raw;
    let args = block.arguments;
    if (
      raw.length <= PREVIEW_EVERY_DELTA_UP_TO ||
      (raw.length - open.previewedLength) * PREVIEW_GROWTH_DIVISOR >= raw.length
    ) {
      open.previewedLength = raw.length;
      const preview = parsePartialJson(raw);
      if (isRecord(preview)) args = preview;
    }
    this.replace(
      contentIndex,
      block.signature === undefined
        ? { type: 'toolCall', id: block.id, name: block.name, arguments: args }
        : { type: 'toolCall', id: block.id, name: block.name, arguments: args, signature: block.signature },
    );
    return { type: 'toolcall_delta', contentIndex, delta, partial: this.current };
  }

  /**
   * Sets the provider's replay data on the tool call at `contentIndex` (see `ToolCall.signature`: Gemini's thought
   * signature). No event: it shows at `toolcall_end` and in the message.
   */
  setToolCallSignature(contentIndex: number, signature: string): void {
    const block = this.blockAt(contentIndex, 'toolCall');
    this.replace(contentIndex, { ...block, signature });
  }

  /** Closes a tool call, parsing its arguments strictly (see {@link ToolCall.invalidArguments}). */
  endToolCall(contentIndex: number): ToolCallEndEvent {
    const toolCall = this.finishToolCall(contentIndex);
    return { type: 'toolcall_end', contentIndex, toolCall, partial: this.current };
  }

  /** The terminal `done` event with the final message. */
  done(stopReason: Exclude<StopReason, 'error' | 'aborted' | 'blocked'>): DoneEvent {
    this.finishOpenToolCalls();
    return { type: 'done', message: this.snapshot(stopReason) };
  }

  /**
   * The terminal `done` event of an answer the vendor blocked (a safety filter, a guardrail, a refusal): `stopReason`
   * `blocked` with `blockReason` in the vendor's words. The content so far is kept for the record; the message is
   * never replayed and its tool calls never run (`isRecordOnly`).
   */
  blocked(blockReason: string): DoneEvent {
    this.finishOpenToolCalls();
    return { type: 'done', message: { ...this.snapshot('blocked'), blockReason } };
  }

  /**
   * The terminal `error` event: the content so far is kept, `stopReason` is `aborted` when `kind` is `aborted` and
   * `error` otherwise.
   */
  error(kind: ProviderErrorKind, errorMessage: string, retryAfterMs?: number): ErrorEvent {
    this.finishOpenToolCalls();
    const stopReason: StopReason = kind === 'aborted' ? 'aborted' : 'error';
    const message: AssistantMessage =
      retryAfterMs === undefined
        ? { ...this.snapshot(stopReason), errorMessage, errorKind: kind }
        : { ...this.snapshot(stopReason), errorMessage, errorKind: kind, retryAfterMs };
    return retryAfterMs === undefined
      ? { type: 'error', message, errorKind: kind }
      : { type: 'error', message, errorKind: kind, retryAfterMs };
  }

  private finishToolCall(contentIndex: number): ToolCall {
    const block = this.blockAt(contentIndex, 'toolCall');
    const raw = this.openArguments?.get(contentIndex)?.raw;
    if (raw === undefined) return block; // already finished, or arrived whole (startToolCall with arguments)
    this.openArguments!.delete(contentIndex);
    const parsed = parseToolArguments(raw);
    const signed = block.signature === undefined ? {} : { signature: block.signature };
    const toolCall: ToolCall = parsed.ok
      ? { type: 'toolCall', id: block.id, name: block.name, arguments: parsed.value, ...signed }
      : { type: 'toolCall', id: block.id, name: block.name, arguments: {}, invalidArguments: raw, ...signed };
    this.replace(contentIndex, toolCall);
    return toolCall;
  }

  /** A call left open by a terminal event is parsed strictly too: a cut-off call must not look valid. */
  private finishOpenToolCalls(): void {
    if (this.openArguments === undefined || this.openArguments.size === 0) return;
    for (const index of [...this.openArguments.keys()]) this.finishToolCall(index);
  }

  /**
   * `text + delta`, flattened now and then. V8 builds each `+` as a rope node pointing at the previous text, so a
   * 100,000-delta answer is a 100,000-node chain that stays alive (the latest text holds it) and that every young
   * garbage collection copies while it grows. Reading a character flattens the rope into one string, so its nodes die
   * young. Flattening copies the text, so it happens when the appends since the last flatten reach 1/16 of the text's
   * length (and at least 256): amortised O(1) per character, and on a long stream garbage collection goes from the
   * largest cost of a delta to a small one.
   */
  private append(text: string, delta: string): string {
    const joined = text + delta;
    const since = ++this.appendsSinceFlatten;
    if (since >= 256 && since * 16 >= joined.length) this.flatten(joined);
    return joined;
  }

  /** Flattens `text` (reading a character does) and starts counting appends again. */
  private flatten(text: string): void {
    text.charCodeAt(0);
    this.appendsSinceFlatten = 0;
  }

  private blockAt<T extends AssistantContent['type']>(
    contentIndex: number,
    type: T,
  ): Extract<AssistantContent, { type: T }> {
    const block = this.blocks[contentIndex];
    if (block === undefined || block.type !== type) return noBlock(contentIndex, type);
    return block as Extract<AssistantContent, { type: T }>;
  }

  private push(block: AssistantContent): number {
    const blocks = this.blocks.slice();
    blocks.push(block);
    this.blocks = blocks;
    this.refresh();
    return blocks.length - 1;
  }

  private replace(contentIndex: number, block: AssistantContent): void {
    // Copy-on-write: snapshots already handed out keep the old array and the old block.
    const blocks = this.blocks.slice();
    blocks[contentIndex] = block;
    this.blocks = blocks;
    this.refresh();
  }

  private refresh(): AssistantMessage {
    this.current = this.snapshot('stop');
    return this.current;
  }

  private snapshot(stopReason: StopReason): AssistantMessage {
    // One literal per snapshot, one of a few fixed shapes (a spread per delta would cost several times more).
    // Optional fields appear only when set, so serialisation stays byte-stable.
    const { blocks: content, usage, provider, model, timestamp, responseId, metadata } = this;
    if (responseId === undefined) {
      return metadata === undefined
        ? { role: 'assistant', content, stopReason, usage, provider, model, timestamp }
        : { role: 'assistant', content, stopReason, usage, provider, model, timestamp, metadata };
    }
    return metadata === undefined
      ? { role: 'assistant', content, stopReason, usage, provider, model, timestamp, responseId }
      : { role: 'assistant', content, stopReason, usage, provider, model, timestamp, responseId, metadata };
  }
}

/** Throws for a call naming a block that does not exist or has another type (a provider's bug). */
function noBlock(contentIndex: number, type: AssistantContent['type']): never {
  throw new Error(`MessageAssembler: no ${type} block at index ${contentIndex}`);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
