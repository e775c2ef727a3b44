/**
 * Memory across threads: recalls a store's items for the run's input into a context fragment, and writes facts
 * after a run (a user function or a side model call with a fixed prompt).
 * @module
 */
import { concatMap, defer, from, last, map, of, type Observable } from 'rxjs';
import { textOf, type Message } from '../types/messages.js';
import type { RunOutcome } from '../types/agent-events.js';
import type { StatePatch } from '../types/state.js';
import { factKey, type JsonValue, type Namespace, type SearchItem, type Store } from '../types/store.js';
import type { HookContext } from './hook-context.js';
import { sinkOf } from './hook-sink.js';
import { serializeForSummary } from './serialize-for-summary.js';
import type { Middleware, RunEndContext } from './types.js';

/** A fact to store: its key (default: a hash of its text) and its text. */
export interface MemoryFact {
  readonly key?: string | undefined;
  readonly text: string;
}

/** Options of {@link memory}. */
export interface MemoryOptions {
  readonly store: Store;
  /**
   * The namespace of the run's memory, from its context: the application decides (`ctx.principal?.id` where a server
   * authenticated the caller). `undefined`: this run neither recalls nor extracts.
   */
  readonly namespace: (ctx: HookContext) => Namespace | undefined;
  /** How many items are recalled (default 5). */
  readonly recall?: { readonly limit?: number | undefined } | undefined;
  /**
   * After a run that ended `completed`: `'model'` asks the run's model (a side call through the run's wrappers, purpose
   * `memory-extraction`) with {@link MEMORY_EXTRACTION_PROMPT}; a function returns the facts itself; absent: nothing.
   */
  readonly extract?:
    'model' | ((ctx: RunEndContext) => readonly MemoryFact[] | Promise<readonly MemoryFact[]>) | undefined;
  /** The id of the context fragment (default `memory`). */
  readonly fragmentId?: string | undefined;
  /** TTL of extracted facts, in ms (default: forever). */
  readonly ttl?: number | undefined;
}

/** The fixed system prompt of `extract: 'model'`: one fact a line, `- ` first; `NONE` when there is nothing. */
export const MEMORY_EXTRACTION_PROMPT =
  'You extract durable facts about the user from a conversation: preferences, personal details, decisions. ' +
  'Answer with one fact per line, each starting with "- ", written in the third person ("The user ..."). ' +
  'Leave out anything temporary or already obvious. If there is nothing worth remembering, answer NONE.';

/**
 * A middleware that gives an agent memory across threads from a {@link Store}.
 *
 * - `onRunStart`: searches `namespace(ctx)` with the text of the last user message (vector search when the store has
 *   `embed`, else the store's text match; no query when there is no text) and answers a state patch adding the
 *   context fragment `memory` (one line per item) — or removing it when nothing is recalled. The patch records this
 *   middleware as its producer; the fragment is rendered after the system prompt, so the prompt's prefix stays
 *   byte-stable for prompt caching and only the fragment's text changes from run to run.
 * - `onRunEnd` (only when `extract` is set and the run `completed`): stores the facts, keyed by a hash of their text
 *   (so the same fact is stored once) in the same namespace.
 *
 * A store failure fails the run (a `HookError`); declare `onError: 'skip'` by wrapping it if memory is optional.
 *
 * @example
 * const agent = new Agent({
 *   provider, model, checkpointer,
 *   middleware: [memory({ store, namespace: (ctx) => ctx.principal && ['users', ctx.principal.id, 'facts'], extract: 'model' })],
 *   tools: [rememberTool({ store, namespace: (ctx) => ctx.principal && ['users', ctx.principal.id, 'facts'] })],
 * });
 */
export function memory(options: MemoryOptions): Middleware {
  const { store, namespace, extract } = options;
  const limit = options.recall?.limit ?? 5;
  const fragmentId = options.fragmentId ?? 'memory';
  const name = 'memory';
  return {
    name,
    writes: [`cubepi:fragment.${fragmentId}`],
    onRunStart(ctx: HookContext): Observable<StatePatch | undefined> {
      return defer(() => {
        const ns = namespace(ctx);
        if (ns === undefined) return of(undefined);
        const query = lastUserText(ctx.messages);
        return from(store.search(ns, { limit, ...(query === '' ? {} : { query }) })).pipe(
          map((items): StatePatch =>
            items.length === 0
              ? { removeContextFragmentIds: [fragmentId] }
              : { addContextFragments: [{ id: fragmentId, content: renderMemory(items) }] },
          ),
        );
      });
    },
    onRunEnd(ctx: RunEndContext, outcome: RunOutcome): Observable<undefined> {
      return defer(() => {
        const ns = namespace(ctx);
        if (extract === undefined || ns === undefined || outcome !== 'completed') return of(undefined);
        const facts$: Observable<readonly MemoryFact[]> =
          extract === 'model' ? extractWithModel(ctx) : defer(() => from(Promise.resolve(extract(ctx))));
        return facts$.pipe(
          concatMap((facts) =>
            Promise.all(
              facts
                .filter((fact) => fact.text.trim() !== '')
                .map((fact) =>
                  store.put(
                    ns,
                    fact.key ?? factKey(fact.text),
                    { text: fact.text.trim() },
                    {
                      ...(options.ttl === undefined ? {} : { ttl: options.ttl }),
                    },
                  ),
                ),
            ),
          ),
          map(() => undefined),
        );
      });
    },
  };
}

function extractWithModel(ctx: RunEndContext): Observable<readonly MemoryFact[]> {
  const sink = sinkOf(ctx);
  if (sink?.callModel === undefined) return of([]);
  const request = {
    systemPrompt: MEMORY_EXTRACTION_PROMPT,
    messages: [
      {
        role: 'user' as const,
        content: `Conversation:\n\n${serializeForSummary(ctx.messages)}\n\nList the facts now.`,
        timestamp: Date.now(),
      },
    ],
  };
  return sink.callModel(request, 'memory-extraction', `${ctx.runId}.memory-extraction`).pipe(
    last((event) => event.type === 'done' || event.type === 'error', undefined),
    map((terminal) =>
      terminal?.type !== 'done'
        ? []
        : textOf(terminal.message)
            .split('\n')
            .map((line) => line.trim())
            .filter((line) => line.startsWith('- '))
            .map((line) => ({ text: line.slice(2).trim() })),
    ),
  );
}

function lastUserText(messages: readonly Message[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.role === 'user') return textOf(message).trim();
  }
  return '';
}

/** The fragment's text: a heading, then one line per item (its `text` field, or its JSON). */
export function renderMemory(items: readonly SearchItem[]): string {
  return [
    'What you remember about the user (from earlier conversations):',
    ...items.map((item) => `- ${itemText(item.value)}`),
  ].join('\n');
}

function itemText(value: JsonValue): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const text = (value as Readonly<Record<string, JsonValue>>)['text'];
    if (typeof text === 'string') return text;
  }
  return JSON.stringify(value);
}
