// File blocks on AnthropicProvider, through the real @anthropic-ai/sdk client against a local server: documents
// (base64 PDF, plain text, URL, Files API id with its beta header), images as files, files inside tool results, and
// the files the Messages API cannot take refused before anything is sent.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  EMPTY_USAGE,
  findModel,
  userMessage,
  type AssistantMessage,
  type FileContent,
  type Message,
  type ToolResultMessage,
} from 'cubepi';
import { AnthropicProvider } from 'cubepi/providers/anthropic';
import { anthropicMessagesWire } from 'cubepi/testing';
import { ReplayServer, sse } from './replay-server.js';
import { collectStream } from './stream-harness.js';

const SONNET = findModel('claude-sonnet-4-6')!;
const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const PDF = b64('%PDF-1.4\n1 0 obj <<>> endobj\n%%EOF');

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const provider = () => new AnthropicProvider({ apiKey: 'k', baseURL: server.url, cacheRetention: 'none' });
const OK = () => sse(anthropicMessagesWire.text(['ok'], { input: 3, output: 1 }).chunks.join(''));

/** The assistant turn asking for one tool call, answered by the tool result that follows it. */
const toolCallTurn = (id: string, name: string): AssistantMessage => ({
  role: 'assistant',
  content: [{ type: 'toolCall', id, name, arguments: {} }],
  stopReason: 'toolUse',
  provider: 'anthropic',
  model: SONNET.id,
  usage: EMPTY_USAGE,
  timestamp: 0,
});

async function send(messages: Message[]) {
  server.reply(OK());
  const result = await collectStream(provider().stream(SONNET, messages));
  expect(result.message.stopReason).toBe('stop');
  return server.requests.at(-1)!;
}

describe('AnthropicProvider: files in user messages', () => {
  it('a PDF by data, by URL and by Files API id; text as a plain-text document; name as title', async () => {
    const request = await send([
      userMessage([
        { type: 'text', text: 'Compare these' },
        { type: 'file', mimeType: 'application/pdf', data: PDF, name: 'report.pdf' },
        { type: 'file', mimeType: 'application/pdf', url: 'https://example.com/a.pdf' },
        { type: 'file', mimeType: 'application/pdf', fileId: 'file_011CNha8iCJcU1wXNR6q4V8w' },
        { type: 'file', mimeType: 'text/csv; charset=utf-8', data: b64('a,b\n1,ü\n'), name: 'data.csv' },
        { type: 'file', mimeType: 'text/plain', fileId: 'file_text_1' },
      ]),
    ]);
    expect(request.body.messages[0].content).toEqual([
      { type: 'text', text: 'Compare these' },
      {
        type: 'document',
        source: { type: 'base64', media_type: 'application/pdf', data: PDF },
        title: 'report.pdf',
      },
      { type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } },
      { type: 'document', source: { type: 'file', file_id: 'file_011CNha8iCJcU1wXNR6q4V8w' } },
      { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'a,b\n1,ü\n' }, title: 'data.csv' },
      { type: 'document', source: { type: 'file', file_id: 'file_text_1' } },
    ]);
    // A file_id source needs the Files API beta.
    expect(request.headers['anthropic-beta']).toBe('files-api-2025-04-14');
  });

  it('no file id, no beta header; an image file becomes an image block; the last document takes the cache breakpoint', async () => {
    server.reply(OK());
    await collectStream(
      new AnthropicProvider({ apiKey: 'k', baseURL: server.url }).stream(SONNET, [
        userMessage([
          { type: 'file', mimeType: 'image/png', data: 'iVBORw0KGgo=' },
          { type: 'file', mimeType: 'image/jpeg', url: 'https://example.com/cat.jpg' },
          { type: 'file', mimeType: 'application/pdf', data: PDF },
        ]),
      ]),
    );
    const request = server.requests.at(-1)!;
    expect(request.headers['anthropic-beta']).toBeUndefined();
    expect(request.body.messages[0].content).toEqual([
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
      {
        type: 'document',
        source: { type: 'base64', media_type: 'application/pdf', data: PDF },
        cache_control: { type: 'ephemeral' },
      },
    ]);
  });
});

describe('AnthropicProvider: files in tool results', () => {
  it('documents go inside the tool_result content, as the API takes them there', async () => {
    const call = toolCallTurn('toolu_1', 'fetch_report');
    const result: ToolResultMessage = {
      role: 'toolResult',
      toolCallId: 'toolu_1',
      toolName: 'fetch_report',
      content: [
        { type: 'text', text: 'Here it is' },
        { type: 'file', mimeType: 'application/pdf', data: PDF, name: 'q3.pdf' },
        { type: 'file', mimeType: 'text/markdown', data: b64('# Notes') },
      ],
      isError: false,
      timestamp: 0,
    };
    const request = await send([userMessage('Get the report'), call, result]);
    expect(request.body.messages[2]).toEqual({
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'toolu_1',
          content: [
            { type: 'text', text: 'Here it is' },
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF }, title: 'q3.pdf' },
            { type: 'document', source: { type: 'text', media_type: 'text/plain', data: '# Notes' } },
          ],
        },
      ],
    });
  });
});

describe('AnthropicProvider: files the API cannot take', () => {
  const refused: [string, FileContent, string, string][] = [
    [
      'audio',
      { type: 'file', mimeType: 'audio/wav', data: b64('RIFF'), name: 'a.wav' },
      'model_incapable',
      'The file "a.wav" (audio/wav) in a user message cannot be sent to Anthropic: the Messages API takes no audio',
    ],
    [
      'video',
      { type: 'file', mimeType: 'video/mp4', url: 'https://example.com/v.mp4' },
      'model_incapable',
      'takes no video',
    ],
    [
      'a spreadsheet',
      { type: 'file', mimeType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', data: b64('PK') },
      'model_incapable',
      'PDFs, plain-text documents and images only',
    ],
    [
      'a text file by URL',
      { type: 'file', mimeType: 'text/plain', url: 'https://example.com/a.txt' },
      'model_incapable',
      'not text files',
    ],
    [
      'a non-http URL',
      { type: 'file', mimeType: 'application/pdf', url: 's3://bucket/a.pdf' },
      'model_incapable',
      'http(s) URLs only',
    ],
    [
      'an unresolved ref',
      { type: 'file', mimeType: 'application/pdf', ref: `sha256:${'a'.repeat(64)}`, size: 10 },
      'model_incapable',
      `its blob reference sha256:${'a'.repeat(64)} was not resolved`,
    ],
    [
      'text bytes that are not UTF-8',
      { type: 'file', mimeType: 'text/plain', data: Buffer.from([0xff, 0xfe, 0x00]).toString('base64') },
      'bad_request',
      'not base64-encoded UTF-8 text',
    ],
  ];
  it.each(refused)('%s: a typed error event naming the block, nothing sent', async (_, file, kind, words) => {
    const { events, message } = await collectStream(
      provider().stream(SONNET, [userMessage([{ type: 'text', text: 'x' }, file])]),
    );
    expect(events.map((e) => e.type)).toEqual(['error']);
    expect(message.errorKind).toBe(kind);
    expect(message.errorMessage).toContain(words);
    expect(server.requests).toHaveLength(0);
  });

  it('in a tool result, the message names the tool call', async () => {
    const result: ToolResultMessage = {
      role: 'toolResult',
      toolCallId: 'toolu_9',
      toolName: 'record',
      content: [{ type: 'file', mimeType: 'audio/mpeg', data: b64('ID3') }],
      isError: false,
      timestamp: 0,
    };
    const call = toolCallTurn('toolu_9', 'record');
    const { message } = await collectStream(provider().stream(SONNET, [userMessage('rec'), call, result]));
    expect(message.errorKind).toBe('model_incapable');
    expect(message.errorMessage).toBe(
      'The file (audio/mpeg) in the result of tool call toolu_9 cannot be sent to Anthropic: the Messages API takes no audio',
    );
    expect(server.requests).toHaveLength(0);
  });
});
