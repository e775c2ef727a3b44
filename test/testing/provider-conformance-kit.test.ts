// The conformance kit itself can fail: run against providers that break one rule each, the cases about that rule
// fail (and the kit's other cases still pass), so a provider that passes the kit keeps the contract.
import { createServer } from 'node:http';
import { ReplaySubject, map, type Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { Model, Provider, StreamEvent } from 'cubepi';
import { openAIChatWire, providerConformance } from 'cubepi/testing';
import { OpenAIProvider } from 'cubepi/providers/openai';

type Stream = Provider['stream'];

/** Registers the kit for `make`, collecting its cases instead of handing them to vitest; runs them all. */
async function runKit(make: (inner: OpenAIProvider) => Provider): Promise<Map<string, unknown>> {
  const cases: [string, () => Promise<void>][] = [];
  providerConformance({
    wire: openAIChatWire,
    createServer,
    provider: (baseURL) => make(new OpenAIProvider({ baseURL, apiKey: 'test-key' })),
    describe: (_name, body) => body(),
    it: (name, body) => void cases.push([name, body]),
    stallMs: 200,
    closeDeadlineMs: 1000,
  });
  const outcomes = new Map<string, unknown>();
  for (const [name, body] of cases)
    outcomes.set(
      name,
      await body().then(
        () => 'passed',
        (error: unknown) => error,
      ),
    );
  return outcomes;
}

const failing = (outcomes: Map<string, unknown>) => [...outcomes].filter(([, o]) => o !== 'passed').map(([n]) => n);

function wrap(inner: Provider, stream: (...args: Parameters<Stream>) => Observable<StreamEvent>): Provider {
  return { id: inner.id, stream: (model: Model, ...rest) => stream(model, ...rest) };
}

describe('providerConformance', () => {
  it('passes every case for the real OpenAIProvider', async () => {
    expect(failing(await runKit((inner) => inner))).toEqual([]);
  });

  it('fails "is cold" and the unsubscribe case for a provider that sends its request at stream()', async () => {
    const failed = failing(
      await runKit((inner) =>
        wrap(inner, (...args) => {
          const hot = new ReplaySubject<StreamEvent>(Infinity);
          inner.stream(...args).subscribe(hot); // eager, and unsubscribing from `hot` cannot abort it
          return hot;
        }),
      ),
    );
    expect(failed).toContain('is cold: no request before subscribing, one request per subscription');
    expect(failed).toContain('unsubscribing aborts the request: the server sees the connection close');
  });

  it('fails the error cases for a provider that throws failures on the Observable error channel', async () => {
    const failed = failing(
      await runKit((inner) =>
        wrap(inner, (...args) =>
          inner.stream(...args).pipe(
            map((event) => {
              if (event.type === 'error') throw new Error(event.message.errorMessage);
              return event;
            }),
          ),
        ),
      ),
    );
    for (const status of [429, 500, 400, 401])
      expect(failed.some((name) => name.startsWith(`HTTP ${status} `))).toBe(true);
    expect(failed).not.toContain('assembles tool-call arguments streamed across chunks');
  });

  it('fails the message and usage cases for a provider whose final message differs from its deltas', async () => {
    const failed = failing(
      await runKit((inner) =>
        wrap(inner, (...args) =>
          inner.stream(...args).pipe(
            map((event) =>
              event.type === 'done'
                ? {
                    ...event,
                    message: {
                      ...event.message,
                      content: [{ type: 'text' as const, text: 'rewritten' }],
                      usage: { ...event.message.usage, input: 0 },
                    },
                  }
                : event,
            ),
          ),
        ),
      ),
    );
    expect(failed).toContain(
      'emits start first and exactly one terminal event, last; the message equals what its deltas build',
    );
    expect(failed).toContain('reports the usage the wire sent');
  });
});
