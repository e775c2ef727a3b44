/**
 * docs/ui.md, "Angular" and "Svelte": neither framework needs a cubepi package, because both take an Observable as it
 * is. Angular's `toSignal` reads the assembled transcript and, when its injector is destroyed (the component goes
 * away), unsubscribes — which cancels the run it was reading. Svelte's store contract (`subscribe` returning an object
 * with `unsubscribe`) is what an Observable already is: `$messages` in a compiled component, `derived` and `get` read
 * it, and the last unsubscriber leaving cancels the run.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createEnvironmentInjector, Injector, type EnvironmentInjector } from '@angular/core';
import { toSignal } from '@angular/core/rxjs-interop';
import { firstValueFrom, filter, type Observable } from 'rxjs';
import type { Component } from 'svelte';
import { compile } from 'svelte/compiler';
import { render } from 'svelte/server';
import { derived, get, type Readable } from 'svelte/store';
import { describe, expect, it } from 'vitest';
import { Agent, type Message } from 'cubepi';
import { assembleMessages } from 'cubepi/operators';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { waitingTool } from './helpers.js';

const textOf = (message: Message | undefined): string => {
  const content: unknown = message?.content;
  if (typeof content === 'string') return content;
  return Array.isArray(content) ? content.map((block: { text?: string }) => block.text ?? '').join('') : '';
};

/** An agent whose model calls `wait`, a tool that only ends when its signal fires; `aborted` resolves then. */
function waitingAgent(): { agent: Agent; started: Promise<unknown>; aborted: Promise<unknown> } {
  const { tool, started, aborted } = waitingTool('wait');
  const provider = new FauxProvider({ responses: [fauxMessage([fauxToolCall('wait', {})]), fauxMessage('never')] });
  return { agent: new Agent({ provider, model: 'faux', tools: [tool] }), started, aborted };
}

describe('Angular: toSignal over the operators', () => {
  it('reads the assembled transcript as a signal, updated as the run streams', async () => {
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('Hello there!')] }),
      model: 'faux',
    });
    const injector: EnvironmentInjector = createEnvironmentInjector([], Injector.NULL as EnvironmentInjector);
    const run$ = agent.prompt$('Hi').pipe(assembleMessages());
    const messages = toSignal(run$, { initialValue: [] as readonly Message[], injector });
    await firstValueFrom(agent.events$.pipe(filter((event) => event.type === 'agent_end')));
    expect(messages().map((message) => message.role)).toEqual(['user', 'assistant']);
    expect(textOf(messages()[1])).toBe('Hello there!');
    injector.destroy();
  });

  it("destroying the signal's injector (the component going away) cancels the run it reads", async () => {
    const { agent, started, aborted } = waitingAgent();
    const injector = createEnvironmentInjector([], Injector.NULL as EnvironmentInjector);
    const messages = toSignal(agent.prompt$('Go').pipe(assembleMessages()), {
      initialValue: [] as readonly Message[],
      injector,
    });
    await started;
    expect(messages().some((message) => message.role === 'assistant')).toBe(true);
    injector.destroy();
    expect(await aborted).toBeInstanceOf(Error);
    const seen = messages().length;
    // The transcript is closed consistently: the call has exactly one result.
    await expect.poll(() => agent.state.messages.filter((message) => message.role === 'toolResult').length).toBe(1);
    expect(messages().length).toBe(seen); // nothing reaches the signal after its injector is gone
  });
});

/** Compiles a Svelte component for the server and imports it (its `svelte/internal/server` import made absolute). */
async function svelteComponent<Props extends Record<string, unknown>>(
  source: string,
): Promise<{ default: Component<Props> }> {
  const { js } = compile(source, { generate: 'server', filename: 'Transcript.svelte' });
  const internal = import.meta.resolve('svelte/internal/server');
  const dir = await mkdtemp(join(tmpdir(), 'cubepi-svelte-'));
  const file = join(dir, 'Transcript.js');
  try {
    await writeFile(file, js.code.replaceAll("'svelte/internal/server'", JSON.stringify(internal)));
    return (await import(/* @vite-ignore */ pathToFileURL(file).href)) as { default: Component<Props> };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('Svelte: an Observable is a store', () => {
  it('$messages in a compiled component renders the transcript', async () => {
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('Hello there!')] }),
      model: 'faux',
    });
    await agent.prompt('Hi');
    const Transcript = await svelteComponent<{
      messages: Observable<readonly Message[]>;
      textOf: typeof textOf;
    }>(
      `<script>let { messages, textOf } = $props();</script>{#each $messages as message}<p class={message.role}>{textOf(message)}</p>{/each}`,
    );
    const messages: Observable<readonly Message[]> = agent.events$.pipe(assembleMessages(agent.state.messages));
    const { body } = render(Transcript.default, { props: { messages, textOf } });
    expect(body).toContain('<p class="user">Hi</p>');
    expect(body).toContain('<p class="assistant">Hello there!</p>');
  });

  it('derived/get read it, subscribers see it stream, and the last one leaving cancels the run', async () => {
    const { agent, started, aborted } = waitingAgent();
    const messages = agent.prompt$('Go').pipe(assembleMessages());
    // At run time the Observable is the store; svelte/store's types want a function unsubscriber (docs/ui.md).
    const count = derived(messages as unknown as Readable<readonly Message[]>, (list) => list.length, 0);
    const seen: number[] = [];
    const unsubscribe = count.subscribe((n) => seen.push(n));
    await started;
    expect(seen.at(-1)).toBeGreaterThanOrEqual(2); // the user message and the assistant's tool call
    expect(get(count)).toBe(seen.at(-1)); // derived holds the one subscription: get() reads its value, no second run
    unsubscribe();
    expect(await aborted).toBeInstanceOf(Error);
  });
});
