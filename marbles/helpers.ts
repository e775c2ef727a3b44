import { catchError, isObservable, of, type Observable, type OperatorFunction } from 'rxjs';
import { expect } from 'vitest';
import {
  EMPTY_STATE,
  HookError,
  userMessage,
  type AssistantMessage,
  type HookContext,
  type HookResult,
  type Message,
  type ToolCall,
} from 'cubepi';
import { createTestScheduler } from 'cubepi/testing';
import type { TestScheduler } from 'rxjs/testing';

/** A fresh TestScheduler comparing with vitest's deep equality (the same helper users get from cubepi/testing). */
export function testScheduler(): TestScheduler {
  return createTestScheduler(expect);
}

/** A hook context for hooks called outside a run. */
export function hookContext(signal: AbortSignal = new AbortController().signal): HookContext {
  return {
    runId: 'run',
    turnIndex: 0,
    model: { id: 'm', provider: 'p' },
    systemPrompt: '',
    tools: [],
    messages: [],
    state: EMPTY_STATE,
    extra: {},
    signal,
  };
}

export const user = (text: string): Message => ({ ...userMessage(text), timestamp: 0 });

export const assistant = (text: string): AssistantMessage => ({
  role: 'assistant',
  content: [{ type: 'text', text }],
  stopReason: 'stop',
  usage: {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    reasoning: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  },
  provider: 'p',
  model: 'm',
  timestamp: 0,
});

export const toolCall: ToolCall = { type: 'toolCall', id: 'c1', name: 'search', arguments: { q: 'x' } };

/** Turns a HookError into a value `"<middleware>.<hook>: <cause message>"`, so marbles can show which hook failed. */
export function hookFailure<T>(): OperatorFunction<T, T | string> {
  return catchError((error: unknown) => {
    if (!(error instanceof HookError)) throw error;
    return of(`${error.middleware}.${error.hook}: ${(error.cause as Error).message}`);
  });
}

/** The Observable a composed hook answered with (asserting that it did: hooks answering with Observables make it one). */
export function observed<T>(answer: HookResult<T>): Observable<T> {
  if (!isObservable(answer))
    throw new Error(`expected the composed hook to answer with an Observable, got ${typeof answer}`);
  return answer;
}
