import { lastValueFrom, toArray, type Observable } from 'rxjs';
import { expect } from 'vitest';
import { z } from 'zod';
import {
  defineTool,
  type AgentEvent,
  type AgentToolResult,
  type AnyAgentTool,
  type Message,
  type ToolCall,
} from 'cubepi';

/** Collects every event of an Observable run. */
export function collect(events$: Observable<AgentEvent>): Promise<AgentEvent[]> {
  return lastValueFrom(events$.pipe(toArray()));
}

/**
 * A compact trace of events for order assertions: `type` plus what tells events apart
 * (`message_end:user`, `tool_execution_end:b`, `message_update:text_delta`).
 */
export function trace(events: readonly AgentEvent[], options: { updates?: boolean } = {}): string[] {
  const out: string[] = [];
  for (const event of events) {
    switch (event.type) {
      case 'message_start':
      case 'message_end': {
        const m = event.message;
        out.push(
          `${event.type}:${m.role === 'toolResult' ? `toolResult(${m.toolCallId})` : m.role === 'assistant' ? `assistant(${m.stopReason})` : m.role}`,
        );
        break;
      }
      case 'message_update':
        if (options.updates) out.push(`message_update:${event.streamEvent.type}`);
        break;
      case 'tool_execution_start':
      case 'tool_execution_update':
      case 'tool_execution_end':
        out.push(`${event.type}:${event.toolCallId}`);
        break;
      default:
        out.push(event.type);
    }
  }
  return out;
}

/**
 * Asserts the transcript promise: every tool call of a completed assistant message has exactly one result, after it
 * and before the next assistant message; no result answers a call that was not made.
 */
export function expectConsistentTranscript(messages: readonly Message[]): void {
  let open: Map<string, number> | undefined;
  const seen = new Set<string>();
  for (const message of messages) {
    if (message.role === 'assistant') {
      if (open !== undefined)
        expect(
          [...open.entries()].filter(([, n]) => n !== 1),
          'every call answered once',
        ).toEqual([]);
      open = undefined;
      if (message.stopReason === 'error' || message.stopReason === 'aborted') continue;
      const calls = message.content.filter((b): b is ToolCall => b.type === 'toolCall');
      if (calls.length > 0) open = new Map(calls.map((c) => [c.id, 0]));
    } else if (message.role === 'toolResult') {
      expect(open?.has(message.toolCallId), `result ${message.toolCallId} answers a call of the previous message`).toBe(
        true,
      );
      open!.set(message.toolCallId, open!.get(message.toolCallId)! + 1);
      expect(seen.has(message.toolCallId), `one result for ${message.toolCallId}`).toBe(false);
      seen.add(message.toolCallId);
    } else if (open !== undefined) {
      // A user message between a call and its result breaks adjacency.
      expect(
        [...open.values()].every((n) => n === 1),
        'tool results come right after their calls',
      ).toBe(true);
      open = undefined;
    }
  }
  if (open !== undefined)
    expect(
      [...open.entries()].filter(([, n]) => n !== 1),
      'every call answered once',
    ).toEqual([]);
}

/** The text of a tool result message or result. */
export function resultText(result: { content: readonly { type: string }[] } | AgentToolResult): string {
  return result.content.map((b) => ('text' in b ? (b as { text: string }).text : '')).join('');
}

/** A deferred Promise. */
export function deferred<T = void>(): {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
} {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

export const tick = (ms = 0) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** An `echo` tool answering `ok <i>` at once. */
export const echoTool = defineTool({
  name: 'echo',
  description: 'Echoes its argument',
  parameters: z.object({ i: z.number() }),
  execute: (_id, { i }) => ({ content: [{ type: 'text', text: `ok ${i}` }] }),
});

/**
 * A tool (named `name`, no parameters) that only ends when its signal fires, rejecting then with the signal's reason:
 * the running tool a cancellation test cancels. `started` resolves with its signal when it runs (the first call),
 * `aborted` with the signal's reason when that fires.
 */
export function waitingTool(name = 'wait'): {
  tool: AnyAgentTool;
  started: Promise<AbortSignal>;
  aborted: Promise<unknown>;
} {
  const started = deferred<AbortSignal>();
  const aborted = deferred<unknown>();
  const tool = defineTool({
    name,
    description: 'Waits until its signal fires',
    parameters: z.object({}),
    execute: (_id, _args, { signal }) =>
      new Promise((_resolve, reject) => {
        signal.addEventListener(
          'abort',
          () => {
            aborted.resolve(signal.reason);
            reject(signal.reason as Error);
          },
          { once: true },
        );
        started.resolve(signal);
      }),
  });
  return { tool, started: started.promise, aborted: aborted.promise };
}
