/**
 * The offline demo model: a scripted provider that needs no key and no network. Whatever the prompt, it lists the
 * working directory, computes something and asks the time (in parallel), reads the README or package.json if there is
 * one, then says what it did and how to use a real model. Labelled as a demo wherever it runs.
 * @module
 */
import { textOf, type Message, type Provider, type ToolResultMessage } from '../index.js';
import { FauxProvider, fauxMessage, fauxText, fauxThinking, fauxToolCall } from '../testing/index.js';

/** Options of {@link demoProvider}. */
export interface DemoProviderOptions {
  /** Pause between streamed chunks, in milliseconds (default 8; 0 streams at once). */
  readonly delayMs?: number | undefined;
}

/**
 * A provider that answers every conversation with the demo script, deciding each step from the messages since the
 * last user message (so it works for any number of turns and threads). Cold and cancellable like every provider:
 * each call streams through a `FauxProvider`.
 */
export function demoProvider(options: DemoProviderOptions = {}): Provider {
  const delayMs = options.delayMs ?? 8;
  return {
    id: 'faux',
    stream: (model, messages, request) =>
      new FauxProvider({ delayMs, responses: [nextStep(messages)] }).stream(model, messages, request),
  };
}

function nextStep(messages: readonly Message[]) {
  const lastUser = messages.findLastIndex((m) => m.role === 'user');
  const since = messages.slice(lastUser + 1);
  const results = since.filter((m): m is ToolResultMessage => m.role === 'toolResult');
  const prompt = lastUser < 0 ? '' : textOf(messages[lastUser]!);
  if (!since.some((m) => m.role === 'assistant')) {
    return fauxMessage([
      fauxThinking('The demo script: look around the directory, do a sum, check the clock.'),
      fauxText('(offline demo model) Looking around this directory first.'),
      fauxToolCall('list_files', { path: '.' }),
      fauxToolCall('calculator', { expression: '6 * 7' }),
      fauxToolCall('current_time', {}),
    ]);
  }
  const listing = results.find((r) => r.toolName === 'list_files');
  const readable = listing === undefined ? undefined : pickReadable(textOf(listing));
  if (readable !== undefined && !results.some((r) => r.toolName === 'read_file')) {
    return fauxMessage([fauxText(`Reading ${readable}.`), fauxToolCall('read_file', { path: readable, limit: 5 })]);
  }
  const read = results.find((r) => r.toolName === 'read_file');
  const lines = [
    `This is cubepi's offline demo model: it does not understand "${clip(prompt, 60)}", it runs a fixed script ` +
      'to show an agent at work.',
    `- list_files found ${countEntries(listing)} entries here`,
    `- calculator: 6 * 7 = ${resultOf(results, 'calculator')}`,
    `- current_time: ${resultOf(results, 'current_time')}`,
    ...(read === undefined ? [] : [`- read_file ${readable}: "${clip(textOf(read).split('\n')[0] ?? '', 60)}"`]),
    'For a real model set ANTHROPIC_API_KEY or OPENAI_API_KEY (or OPENAI_BASE_URL for a local server).',
  ];
  return fauxMessage(lines.join('\n'));
}

function pickReadable(listing: string): string | undefined {
  const names = listing.split('\n');
  return ['README.md', 'package.json'].find((name) => names.includes(name));
}

function countEntries(listing: ToolResultMessage | undefined): number {
  return listing === undefined ? 0 : textOf(listing).split('\n').filter(Boolean).length;
}

function resultOf(results: readonly ToolResultMessage[], tool: string): string {
  const result = results.find((r) => r.toolName === tool);
  return result === undefined ? '(no result)' : textOf(result);
}

function clip(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}
