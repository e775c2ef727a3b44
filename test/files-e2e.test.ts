// A PDF file block through a whole Agent run on every provider, over the real SDKs against local servers (OpenAI
// Chat Completions, OpenAI Responses, Anthropic and Gemini on the HTTP replay server, Bedrock on the HTTP/2 Converse
// server): the request body holds the vendor's document part with the very bytes of the prompt, and a tool's PDF
// result reaches the next request with the same bytes. A model whose table row lacks `pdf` is refused before any
// request (`model_incapable`, the attempt's `incapable`), the server seeing nothing. Then a thread checkpointed in
// SQLite, the PDF stored by reference, continued by a new Agent on a new checkpointer over the same file: the second
// request carries the same base64 string as the first.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { lastValueFrom, toArray } from 'rxjs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, defineTool, findModel, type AgentEvent, type Model, type Provider } from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { AnthropicProvider } from 'cubepi/providers/anthropic';
import { GoogleProvider } from 'cubepi/providers/google';
import { OpenAIProvider, OpenAIResponsesProvider } from 'cubepi/providers/openai';
import {
  anthropicMessagesWire,
  geminiWire,
  openAIChatWire,
  openAIResponsesWire,
  type ConformanceWire,
} from 'cubepi/testing';
import { fakePdf, pdfMessage, type FakePdf } from './blobs/files.js';
import { answer, useBedrockServer } from './providers/bedrock-native.js';
import { streamOf } from './providers/bedrock-server.js';
import { ReplayServer, sse } from './providers/replay-server.js';

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
});
afterAll(() => server.close());
beforeEach(() => server.reset());
const bedrock = useBedrockServer();

const PDF = fakePdf(6_000, 30);
const USAGE = { input: 20, output: 3 };
const textReply = (wire: ConformanceWire) => sse(wire.text(['Read ', 'it.'], USAGE).chunks.map(String).join(''));

const toolReply = (wire: ConformanceWire) =>
  sse(
    wire
      .toolCall({ id: 'call_1', name: 'fetch_report', argumentParts: ['{', '}'] }, USAGE)
      .chunks.map(String)
      .join(''),
  );
const bedrockToolCall = streamOf([
  { type: 'messageStart', body: { role: 'assistant' } },
  {
    type: 'contentBlockStart',
    body: { contentBlockIndex: 0, start: { toolUse: { toolUseId: 'call_1', name: 'fetch_report' } } },
  },
  { type: 'contentBlockDelta', body: { contentBlockIndex: 0, delta: { toolUse: { input: '{}' } } } },
  { type: 'contentBlockStop', body: { contentBlockIndex: 0 } },
  { type: 'messageStop', body: { stopReason: 'tool_use' } },
  { type: 'metadata', body: { usage: { inputTokens: 5, outputTokens: 2, totalTokens: 7 }, metrics: { latencyMs: 1 } } },
]);

/** A tool whose result is a text and a PDF. */
const fetchReport = (pdf: FakePdf) =>
  defineTool({
    name: 'fetch_report',
    description: 'Fetches the report',
    parameters: z.object({}),
    execute: () => ({
      content: [
        { type: 'text', text: 'Attached.' },
        { type: 'file', mimeType: 'application/pdf', data: pdf.base64, name: 'report.pdf' },
      ],
    }),
  });

/** Every string in `value` (deeply) that holds `needle`. */
function stringsHolding(value: unknown, needle: string): string[] {
  if (typeof value === 'string') return value.includes(needle) ? [value] : [];
  if (Array.isArray(value)) return value.flatMap((item) => stringsHolding(item, needle));
  if (value !== null && typeof value === 'object') {
    return Object.values(value).flatMap((item) => stringsHolding(item, needle));
  }
  return [];
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- request bodies are read field by field
type Body = any;

interface Vendor {
  readonly name: string;
  readonly model: Model;
  readonly provider: () => Provider;
  /** Queues the answer on the vendor's server. */
  readonly reply: () => void;
  /** Queues a call of the `fetch_report` tool, then the answer. */
  readonly replyAfterTool: () => void;
  /** The bodies the vendor's server received so far. */
  readonly bodies: () => Body[];
  /** Every content part of the request body's messages, in order. */
  readonly parts: (body: Body) => unknown[];
  /** The vendor's document part for `pdf` named report.pdf. */
  readonly documentPart: (pdf: FakePdf) => unknown;
  /** The base64 bytes of a document part. */
  readonly dataOf: (part: Body) => string;
}

const contentOf = (content: unknown): unknown[] => (Array.isArray(content) ? content : []);

const vendors: Vendor[] = [
  {
    name: 'OpenAI Chat Completions (gpt-4o)',
    model: findModel('gpt-4o')!,
    provider: () => new OpenAIProvider({ apiKey: 'test-key', baseURL: `${server.url}/v1` }),
    reply: () => server.reply(textReply(openAIChatWire)),
    replyAfterTool: () => server.reply(toolReply(openAIChatWire), textReply(openAIChatWire)),
    bodies: () => server.requests.map((request) => request.body),
    parts: (body) => body.messages.flatMap((message: Body) => contentOf(message.content)),
    documentPart: (pdf) => ({
      type: 'file',
      file: { file_data: `data:application/pdf;base64,${pdf.base64}`, filename: 'report.pdf' },
    }),
    dataOf: (part) => String(part.file.file_data).replace(/^data:application\/pdf;base64,/, ''),
  },
  {
    name: 'OpenAI Responses (gpt-4.1)',
    model: findModel('gpt-4.1')!,
    provider: () => new OpenAIResponsesProvider({ apiKey: 'test-key', baseURL: `${server.url}/v1` }),
    reply: () => server.reply(textReply(openAIResponsesWire)),
    replyAfterTool: () => server.reply(toolReply(openAIResponsesWire), textReply(openAIResponsesWire)),
    bodies: () => server.requests.map((request) => request.body),
    parts: (body) => body.input.flatMap((item: Body) => contentOf(item.content)),
    documentPart: (pdf) => ({
      type: 'input_file',
      filename: 'report.pdf',
      file_data: `data:application/pdf;base64,${pdf.base64}`,
    }),
    dataOf: (part) => String(part.file_data).replace(/^data:application\/pdf;base64,/, ''),
  },
  {
    name: 'Anthropic Messages (claude-sonnet-4-6)',
    model: findModel('claude-sonnet-4-6')!,
    provider: () => new AnthropicProvider({ apiKey: 'test-key', baseURL: server.url }),
    reply: () => server.reply(textReply(anthropicMessagesWire)),
    replyAfterTool: () => server.reply(toolReply(anthropicMessagesWire), textReply(anthropicMessagesWire)),
    bodies: () => server.requests.map((request) => request.body),
    parts: (body) => body.messages.flatMap((message: Body) => contentOf(message.content)),
    documentPart: (pdf) => ({
      type: 'document',
      source: { type: 'base64', media_type: 'application/pdf', data: pdf.base64 },
      title: 'report.pdf',
      cache_control: { type: 'ephemeral' }, // the prompt's last block: the cache breakpoint
    }),
    dataOf: (part) => String(part.source.data),
  },
  {
    name: 'Gemini (gemini-3-flash-preview)',
    model: findModel('gemini-3-flash-preview')!,
    provider: () => new GoogleProvider({ apiKey: 'test-key', baseURL: server.url }),
    reply: () => server.reply(textReply(geminiWire)),
    replyAfterTool: () => server.reply(toolReply(geminiWire), textReply(geminiWire)),
    bodies: () => server.requests.map((request) => request.body),
    parts: (body) => body.contents.flatMap((content: Body) => contentOf(content.parts)),
    documentPart: (pdf) => ({ inlineData: { mimeType: 'application/pdf', data: pdf.base64 } }),
    dataOf: (part) => String(part.inlineData.data),
  },
  {
    name: 'Bedrock Converse (us.anthropic.claude-opus-5-5)',
    model: findModel('us.anthropic.claude-opus-5-5')!,
    provider: () => bedrock.provider({ cacheRetention: 'none' }),
    reply: () => void bedrock.server().reply(answer('Read ', 'it.')),
    replyAfterTool: () => void bedrock.server().reply(bedrockToolCall, answer('Read ', 'it.')),
    bodies: () => bedrock.server().requests.map((request) => request.body),
    parts: (body) => body.messages.flatMap((message: Body) => contentOf(message.content)),
    documentPart: (pdf) => ({ document: { format: 'pdf', name: 'report', source: { bytes: pdf.base64 } } }),
    dataOf: (part) => String(part.document.source.bytes),
  },
];

const ofType = <T extends AgentEvent['type']>(events: readonly AgentEvent[], type: T) =>
  events.filter((event): event is Extract<AgentEvent, { type: T }> => event.type === type);

describe.each(vendors)('$name: a PDF through a whole run', (vendor) => {
  it('the table says the model takes pdf', () => {
    expect(vendor.model.input).toContain('pdf');
  });

  it("the request body holds the vendor's document part with the prompt's bytes", async () => {
    const before = vendor.bodies().length;
    vendor.reply();
    const agent = new Agent({ provider: vendor.provider(), model: vendor.model });
    const events = await lastValueFrom(agent.prompt$(pdfMessage(PDF, 'Summarise the report')).pipe(toArray()));

    expect(ofType(events, 'agent_end')[0]!.outcome).toBe('completed');
    expect(ofType(events, 'model_attempt')[0]!.incapable).toBeUndefined();
    const bodies = vendor.bodies().slice(before);
    expect(bodies).toHaveLength(1);
    const documents = vendor.parts(bodies[0]).filter((part) => JSON.stringify(part).includes(PDF.base64.slice(0, 40)));
    expect(documents).toEqual([vendor.documentPart(PDF)]);
    expect(Buffer.from(vendor.dataOf(documents[0]), 'base64').equals(Buffer.from(PDF.bytes))).toBe(true);
    expect(agent.state.messages.map((message) => message.role)).toEqual(['user', 'assistant']);
  });

  it("a tool's PDF result reaches the next request with the same bytes, once", async () => {
    const pdf = fakePdf(5_000, 32);
    const before = vendor.bodies().length;
    vendor.replyAfterTool();
    const agent = new Agent({ provider: vendor.provider(), model: vendor.model, tools: [fetchReport(pdf)] });
    const events = await lastValueFrom(agent.prompt$('Fetch the report and summarise it').pipe(toArray()));

    expect(ofType(events, 'agent_end')[0]!.outcome).toBe('completed');
    const bodies = vendor.bodies().slice(before);
    expect(bodies).toHaveLength(2);
    expect(stringsHolding(bodies[0], pdf.base64.slice(0, 40))).toEqual([]);
    const held = stringsHolding(bodies[1], pdf.base64.slice(0, 40));
    expect(held).toHaveLength(1);
    expect(held[0]!.replace(/^data:application\/pdf;base64,/, '')).toBe(pdf.base64);
    expect(agent.state.messages.map((message) => message.role)).toEqual([
      'user',
      'assistant',
      'toolResult',
      'assistant',
    ]);
  });
});

describe.each([
  ['OpenAI Chat Completions', 'o3-mini', () => new OpenAIProvider({ apiKey: 'test-key', baseURL: `${server.url}/v1` })],
  [
    'OpenAI Responses',
    'o3-mini',
    () => new OpenAIResponsesProvider({ apiKey: 'test-key', baseURL: `${server.url}/v1` }),
  ],
  ['Bedrock Converse', 'openai.gpt-6-astra', () => bedrock.provider({ cacheRetention: 'none' })],
] as const)('%s: %s, whose table row lacks pdf', (_name, id, provider) => {
  it('is refused before any request: model_incapable on model_attempt, the server sees nothing', async () => {
    const model = findModel(id)!;
    expect(model.input).not.toContain('pdf');
    const bedrockBefore = bedrock.server().requests.length;
    const agent = new Agent({ provider: provider(), model });
    const events = await lastValueFrom(agent.prompt$(pdfMessage(PDF, 'Summarise the report')).pipe(toArray()));

    const attempts = ofType(events, 'model_attempt');
    expect(attempts).toHaveLength(1);
    expect(attempts[0]!.incapable).toEqual({
      reason: 'input',
      kind: 'pdf',
      message: `Model ${id} cannot take pdf input`,
    });
    expect(ofType(events, 'agent_end')[0]!.outcome).toBe('failed');
    const last = agent.state.messages.at(-1)!;
    expect(last).toMatchObject({ role: 'assistant', stopReason: 'error', errorKind: 'model_incapable' });
    expect(server.requests).toHaveLength(0);
    expect(bedrock.server().requests.length).toBe(bedrockBefore);
  });
});

describe('SQLite checkpointer: the PDF stored by reference, the thread continued by a new Agent', () => {
  it('the second request (through the openai SDK) carries the same base64 string as the first; the row holds the ref', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cubepi-files-e2e-'));
    const file = join(dir, 'threads.db');
    const pdf = fakePdf(300_000, 31);
    const model = findModel('gpt-4o')!;
    const provider = () => new OpenAIProvider({ apiKey: 'test-key', baseURL: `${server.url}/v1` });
    const first = new SQLiteCheckpointer(file);
    let second: SQLiteCheckpointer | undefined;
    try {
      server.reply(textReply(openAIChatWire), textReply(openAIChatWire));
      const agent = new Agent({ provider: provider(), model, checkpointer: first, threadId: 'report' });
      await agent.prompt(pdfMessage(pdf, 'Summarise the report'));
      await first.close();

      const raw = new Database(file, { readonly: true });
      const rows = raw
        .prepare('SELECT body FROM cubepi_messages WHERE thread_id = ? ORDER BY seq')
        .pluck()
        .all('report') as string[];
      raw.close();
      expect(rows).toHaveLength(2);
      expect(rows[0]).toContain(pdf.ref);
      expect(rows[0]).not.toContain(pdf.base64.slice(0, 64));

      second = new SQLiteCheckpointer(file);
      const restored = new Agent({ provider: provider(), model, checkpointer: second, threadId: 'report' });
      await restored.prompt('And the second page?');

      expect(server.requests).toHaveLength(2);
      const chatFile = (body: Body) =>
        body.messages
          .flatMap((message: Body) => contentOf(message.content))
          .filter((part: Body) => part.type === 'file')
          .map((part: Body) => part.file.file_data as string);
      const [sentFirst, sentSecond] = server.requests.map((request) => chatFile(request.body));
      expect(sentFirst).toEqual([`data:application/pdf;base64,${pdf.base64}`]);
      expect(sentSecond).toEqual(sentFirst); // the same string: the prompt cache's prefix is unchanged
      // The first request's messages are the second's prefix, byte for byte.
      const [firstBody, secondBody] = server.requests.map((request) => request.body);
      expect(secondBody.messages.slice(0, firstBody.messages.length)).toEqual(firstBody.messages);
      expect(server.requests[1]!.body.messages.at(-1)).toMatchObject({ role: 'user' });
      // The restored thread holds the reference, resolved only for the request.
      expect(restored.state.messages[0]!.content).toContainEqual(expect.objectContaining({ ref: pdf.ref }));
      expect(restored.state.messages[0]!.content).not.toContainEqual(expect.objectContaining({ data: pdf.base64 }));
      expect(restored.state.messages.map((message) => message.role)).toEqual([
        'user',
        'assistant',
        'user',
        'assistant',
      ]);
    } finally {
      await second?.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
