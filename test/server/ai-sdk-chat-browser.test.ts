// The `useChat` flows with the vendors' own client code in a real browser: the `ai` package's AbstractChat and
// DefaultChatTransport (test/server/ai-sdk-chat-page.mjs, bundled by esbuild for the browser) in a headless Chromium,
// against a createAgentServer with FauxProvider agents, the page served from the same origin. A prompt streams its
// answer and the stored thread is what the Chat shows; an approval answered with addToolApprovalResponse (and
// sendAutomaticallyWhen) resumes the held call, a denial denies it; regenerate() answers again and leaves the original
// thread as it was; a client tool answered in onToolCall with addToolOutput reaches the model's next turn; a PNG file
// part reaches the run as an image block.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { UIMessage } from 'ai';
import * as esbuild from 'esbuild';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  clientTool,
  MemoryCheckpointer,
  ToolGuard,
  type AssistantMessage,
  type Message,
  type ToolResultMessage,
} from 'cubepi';
import { createAgentServer, toNodeListener, type AgentServer } from 'cubepi/server';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { haveChromium, launchChromium, requireChromium } from '../chromium.js';
import { ANSWER, lookup, scriptedProvider } from './serve-helpers.js';

const here = fileURLToPath(new URL('.', import.meta.url));

requireChromium("the AI SDK's Chat browser test");

const HTML = '<!doctype html><meta charset="utf-8"><script type="module" src="/page.js"></script>';
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

interface View {
  status: string;
  error: string | undefined;
  messages: UIMessage[];
  texts: string[];
  toolCalls: { toolName: string; input: unknown }[];
}

const textOf = (message: UIMessage) => message.parts.map((part) => (part.type === 'text' ? part.text : '')).join('');
const assistantText = (message: AssistantMessage) =>
  message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
const resultText = (message: ToolResultMessage) =>
  message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');

const getLocation = clientTool({
  name: 'getLocation',
  description: "The user's city, from the browser",
  parameters: z.object({ precise: z.boolean() }),
});

describe.skipIf(!haveChromium)("the AI SDK's Chat in a headless Chromium against POST /chat", () => {
  let http: Server;
  let server: AgentServer;
  let origin = '';
  let context: BrowserContext;
  let page: Page;
  let dir = '';
  const problems: string[] = [];
  const checkpointer = new MemoryCheckpointer();
  /** What the model was given, per thread, each time it answered after a tool result or a file. */
  const seen = new Map<string, Message[][]>();
  const see = (threadId: string, messages: readonly Message[]) =>
    seen.set(threadId, [...(seen.get(threadId) ?? []), [...messages]]);

  /** Per thread-id prefix: `ask-` holds lookup for approval, `regen-` can answer three times, `client-` calls the
   * client tool getLocation, `file-` answers once; the rest call lookup, then stream {@link ANSWER}. */
  const agent = (threadId: string): Agent => {
    const common = { model: 'faux', checkpointer, threadId };
    if (threadId.startsWith('regen-')) {
      const call = fauxMessage([fauxToolCall('lookup', { word: 'cube' })]);
      const answer = (messages: readonly Message[]) => fauxMessage(`${ANSWER}(${messages.length} messages)`);
      const responses = [call, answer, call, answer, call, answer];
      return new Agent({ ...common, provider: new FauxProvider({ responses }), tools: [lookup] });
    }
    if (threadId.startsWith('client-')) {
      const responses = [
        fauxMessage([fauxToolCall('getLocation', { precise: true }, { id: 'loc1' })]),
        (messages: readonly Message[]) => {
          see(threadId, messages);
          const results = messages.filter((m): m is ToolResultMessage => m.role === 'toolResult');
          return fauxMessage(`Saw: ${results.map(resultText).join(' | ')}`);
        },
      ];
      return new Agent({ ...common, provider: new FauxProvider({ responses }), tools: [lookup, getLocation] });
    }
    if (threadId.startsWith('file-')) {
      const responses = [(messages: readonly Message[]) => (see(threadId, messages), fauxMessage('got it'))];
      return new Agent({ ...common, provider: new FauxProvider({ responses }) });
    }
    return new Agent({
      ...common,
      provider: scriptedProvider(2, 5),
      tools: [lookup],
      ...(threadId.startsWith('ask-')
        ? { middleware: [new ToolGuard({ policy: ToolGuard.byName({ ask: ['lookup'] }) })] }
        : {}),
    });
  };

  beforeAll(async () => {
    const bundle = await esbuild.build({
      entryPoints: [join(here, 'ai-sdk-chat-page.mjs')],
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      define: { 'process.env.NODE_ENV': '"development"' },
      logLevel: 'warning',
    });
    const script = bundle.outputFiles[0]!.text;
    server = createAgentServer({ flushMs: 0, checkpointer, agent });
    const api = toNodeListener(server);
    http = createServer((request, response) => {
      if (request.method === 'GET' && (request.url === '/' || request.url === '/page.js')) {
        const js = request.url === '/page.js';
        response.writeHead(200, { 'content-type': js ? 'text/javascript' : 'text/html' });
        response.end(js ? script : HTML);
        return;
      }
      void api(request, response);
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    dir = mkdtempSync(join(tmpdir(), 'cubepi-chat-browser-'));
    context = await launchChromium(join(dir, 'chromium'));
    page = await context.newPage();
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    await page.goto(`${origin}/`);
    await page.waitForFunction('window.ready === true', undefined, { timeout: 60_000 });
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    server?.close();
    http?.closeAllConnections();
    await new Promise<void>((resolve) => (http ? http.close(() => resolve()) : resolve()));
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  const makeChat = (id: string, kind: 'plain' | 'approvals' | 'client') =>
    page.evaluate(([id, kind]) => (globalThis as unknown as ChatPage).makeChat(id, kind), [id, kind] as const);
  const send = (id: string, text: string, files?: unknown[]) =>
    page.evaluate(([id, text, files]) => (globalThis as unknown as ChatPage).send(id, text, files), [
      id,
      text,
      files,
    ] as const);
  const view = (id: string): Promise<View> => page.evaluate((id) => (globalThis as unknown as ChatPage).view(id), id);
  /** Waits, in the page, until the chat is ready and its last message is an assistant's with `includes` in its text. */
  const settled = (id: string, includes: string) =>
    page.waitForFunction(
      ([id, includes]) => {
        const { status, messages } = (globalThis as unknown as ChatPage).view(id);
        const last = messages.at(-1);
        const text = last?.parts.map((part) => (part.type === 'text' ? part.text : '')).join('') ?? '';
        return status === 'ready' && last?.role === 'assistant' && text.includes(includes);
      },
      [id, includes] as const,
      { timeout: 60_000, polling: 20 },
    );
  const stored = async (threadId: string) => (await checkpointer.load(threadId))!.messages;

  it('a prompt streams its answer, and the stored thread is what the Chat shows', { timeout: 60_000 }, async () => {
    await makeChat('stream-1', 'plain');
    await send('stream-1', 'Define cube');
    const shown = await view('stream-1');
    expect(shown.error).toBeUndefined();
    expect(shown.status).toBe('ready');
    // The answer arrived in pieces: the chat showed many growing texts, each a prefix of the next.
    const answer = textOf(shown.messages.at(-1)!);
    expect(answer).toBe(`${ANSWER}(3 messages)`);
    expect(shown.texts.length).toBeGreaterThan(1);
    for (const text of shown.texts) expect(answer.startsWith(text)).toBe(true);
    // The stored thread: the prompt, the call the chat shows with its output, and the same answer.
    const messages = await stored('stream-1');
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'toolResult', 'assistant']);
    expect(textOf(shown.messages[0]!)).toBe('Define cube');
    expect(messages[0]!.content).toBe('Define cube');
    const call = (messages[1] as AssistantMessage).content.find((block) => block.type === 'toolCall')!;
    expect(shown.messages.at(-1)!.parts.find((part) => part.type === 'tool-lookup')).toMatchObject({
      state: 'output-available',
      toolCallId: call.id,
      input: call.arguments,
      output: { content: [{ type: 'text', text: resultText(messages[2] as ToolResultMessage) }] },
    });
    expect(assistantText(messages[3] as AssistantMessage)).toBe(answer);
    expect(problems).toEqual([]);
  });

  it(
    'an approval answered with addToolApprovalResponse resumes the held call; a denial denies it',
    { timeout: 60_000 },
    async () => {
      for (const [id, approved] of [
        ['ask-yes', true],
        ['ask-no', false],
      ] as const) {
        await makeChat(id, 'approvals');
        await send(id, 'Define cube');
        const held = (await view(id)).messages.at(-1)!.parts.find((part) => part.type === 'tool-lookup') as {
          state: string;
          approval?: { id: string };
        };
        expect(held).toMatchObject({ state: 'approval-requested' });
        await page.evaluate(
          ([id, approvalId, approved]) =>
            (globalThis as unknown as ChatPage).respond(id, approvalId, approved, approved ? undefined : 'not today'),
          [id, held.approval!.id, approved] as const,
        );
        await settled(id, ANSWER);
        const shown = await view(id);
        expect(shown.error).toBeUndefined();
        expect(shown.messages).toHaveLength(2); // the resumed run goes on in the assistant message that asked
        const tool = shown.messages.at(-1)!.parts.find((part) => part.type === 'tool-lookup');
        const messages = await stored(id);
        expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'toolResult', 'assistant']);
        if (approved) {
          expect(tool).toMatchObject({
            state: 'output-available',
            output: { content: [{ type: 'text', text: 'cube: a word' }] },
          });
          expect(resultText(messages[2] as ToolResultMessage)).toBe('cube: a word');
        } else {
          expect(tool).toMatchObject({ state: 'output-denied' });
          expect((messages[2] as ToolResultMessage).isError).toBe(true);
          expect(JSON.stringify(messages[2])).toContain('not today');
        }
      }
      expect(problems).toEqual([]);
    },
  );

  it('regenerate() streams a new answer and leaves the original thread unchanged', { timeout: 60_000 }, async () => {
    await makeChat('regen-1', 'plain');
    await send('regen-1', 'Define cube');
    const first = (await view('regen-1')).messages.at(-1)!;
    expect(textOf(first)).toBe(`${ANSWER}(3 messages)`);
    const original = structuredClone(await stored('regen-1'));
    expect(original).toHaveLength(4);

    await page.evaluate((id) => (globalThis as unknown as ChatPage).regenerate(id), 'regen-1');
    const shown = await view('regen-1');
    expect(shown.error).toBeUndefined();
    expect(shown.status).toBe('ready');
    expect(shown.messages).toHaveLength(2);
    const again = shown.messages.at(-1)!;
    expect(again.role).toBe('assistant');
    expect(again.id).not.toBe(first.id); // a new run
    expect(again.parts.find((part) => part.type === 'tool-lookup')).toMatchObject({ state: 'output-available' });
    expect(textOf(again)).toBe(`${ANSWER}(3 messages)`);
    // The original thread in the checkpointer is as it was; the chat id serves the fork, one prompt, one answer.
    expect(await stored('regen-1')).toEqual(original);
    const served = (await (await fetch(`${origin}/threads/regen-1`)).json()) as { messages: Message[] };
    expect(served.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'toolResult', 'assistant']);
    // The fork's answer, made after the original's (a tool call with a 5 ms wait in between), not the original's.
    expect(served.messages[3]!.timestamp).toBeGreaterThan(original[3]!.timestamp);
    expect(problems).toEqual([]);
  });

  it(
    "a client tool: onToolCall → addToolOutput → automatic resend, and the model's next turn sees the output",
    { timeout: 60_000 },
    async () => {
      await makeChat('client-1', 'client');
      await send('client-1', 'Where am I?');
      await settled('client-1', 'Saw:');
      const shown = await view('client-1');
      expect(shown.error).toBeUndefined();
      expect(shown.toolCalls).toEqual([{ toolName: 'getLocation', input: { precise: true } }]);
      expect(shown.messages).toHaveLength(2);
      const answered = shown.messages.at(-1)!;
      expect(textOf(answered)).toBe('Saw: {"city":"Paris"}');
      expect(answered.parts.filter((part) => part.type === 'tool-getLocation')).toEqual([
        expect.objectContaining({ state: 'output-available', toolCallId: 'loc1', output: { city: 'Paris' } }),
      ]);
      const last = seen.get('client-1')![0]!.at(-1) as ToolResultMessage;
      expect([last.role, last.toolCallId, resultText(last)]).toEqual(['toolResult', 'loc1', '{"city":"Paris"}']);
      expect((await stored('client-1')).map((m) => m.role)).toEqual(['user', 'assistant', 'toolResult', 'assistant']);
      expect(problems).toEqual([]);
    },
  );

  it('a PNG file part (a data URL) reaches the run as an image block', { timeout: 60_000 }, async () => {
    await makeChat('file-1', 'plain');
    const file = { type: 'file', mediaType: 'image/png', filename: 'dot.png', url: `data:image/png;base64,${PNG}` };
    await send('file-1', 'What is this?', [file]);
    const shown = await view('file-1');
    expect(shown.error).toBeUndefined();
    expect(textOf(shown.messages.at(-1)!)).toBe('got it');
    expect(shown.messages[0]!.parts).toContainEqual(expect.objectContaining({ type: 'file', mediaType: 'image/png' }));
    // The Chat puts the files before the text (sendMessage's order); the run gets them in that order.
    const expected = [
      { type: 'image', mimeType: 'image/png', data: PNG },
      { type: 'text', text: 'What is this?' },
    ];
    expect((await stored('file-1'))[0]).toMatchObject({ role: 'user', content: expected });
    expect(seen.get('file-1')![0]![0]).toMatchObject({ role: 'user', content: expected });
    expect(problems).toEqual([]);
  });
});

/** The page's functions on `window` (test/server/ai-sdk-chat-page.mjs; the tests have no DOM types: globalThis). */
interface ChatPage {
  makeChat(id: string, kind: string): void;
  send(id: string, text: string, files?: readonly unknown[]): Promise<void>;
  regenerate(id: string): Promise<void>;
  respond(id: string, approvalId: string, approved: boolean, reason?: string): Promise<void>;
  view(id: string): View;
}
