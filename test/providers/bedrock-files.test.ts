// File blocks on BedrockProvider, through the real AWS SDK client against the local HTTP/2 server: documents named
// after the file (sanitized, unique), images, audio and video by bytes or s3:// location, files in tool results
// (audio after the toolResult block), and what Converse cannot take refused before anything is sent.
import { describe, expect, it } from 'vitest';
import {
  EMPTY_USAGE,
  userMessage,
  type AssistantMessage,
  type FileContent,
  type Model,
  type ToolResultMessage,
} from 'cubepi';
import { answer, useBedrockServer } from './bedrock-native.js';
import { collectStream } from './stream-harness.js';

const { server, provider } = useBedrockServer();
const NOVA: Model = { id: 'us.amazon.nova-pro-v1:0', provider: 'bedrock' };
const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const PDF = b64('%PDF-1.4 fake');

async function send(messages: Parameters<ReturnType<typeof provider>['stream']>[1]) {
  server().reply(answer('ok'));
  const { message } = await collectStream(provider({ cacheRetention: 'none' }).stream(NOVA, messages));
  expect(message.stopReason).toBe('stop');
  return server().requests.at(-1)!.body;
}

describe('BedrockProvider: files in user messages', () => {
  it('documents by format, named after the file (sanitized, unique); images, audio, video; s3:// as s3Location', async () => {
    const body = await send([
      userMessage([
        { type: 'text', text: 'Summarize' },
        { type: 'file', mimeType: 'application/pdf', data: PDF, name: 'Q3 report_final.v2.pdf' },
        { type: 'file', mimeType: 'text/csv', data: b64('a,b'), name: 'Q3 report_final.v2.csv' },
        {
          type: 'file',
          mimeType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
          url: 's3://bucket/memo.docx',
          name: 'memo.docx',
        },
        { type: 'file', mimeType: 'application/json', data: b64('{}') },
        { type: 'file', mimeType: 'image/webp', data: b64('RIFF') },
        { type: 'file', mimeType: 'audio/mpeg', data: b64('ID3') },
        { type: 'file', mimeType: 'video/mp4', url: 's3://bucket/clip.mp4' },
      ]),
    ]);
    expect(body.messages[0].content).toEqual([
      { text: 'Summarize' },
      { document: { format: 'pdf', name: 'Q3 report final v2', source: { bytes: PDF } } },
      { document: { format: 'csv', name: 'Q3 report final v2 (2)', source: { bytes: b64('a,b') } } },
      { document: { format: 'docx', name: 'memo', source: { s3Location: { uri: 's3://bucket/memo.docx' } } } },
      { document: { format: 'txt', name: 'document-4', source: { bytes: b64('{}') } } },
      { image: { format: 'webp', source: { bytes: b64('RIFF') } } },
      { audio: { format: 'mp3', source: { bytes: b64('ID3') } } },
      { video: { format: 'mp4', source: { s3Location: { uri: 's3://bucket/clip.mp4' } } } },
    ]);
  });
});

describe('BedrockProvider: files in tool results', () => {
  it('documents and video inside the toolResult; audio, which it cannot hold, right after it in the same turn', async () => {
    const call: AssistantMessage = {
      role: 'assistant',
      content: [{ type: 'toolCall', id: 'tool_1', name: 'fetch', arguments: {} }],
      stopReason: 'toolUse',
      provider: 'bedrock',
      model: NOVA.id,
      usage: EMPTY_USAGE,
      timestamp: 0,
    };
    const result: ToolResultMessage = {
      role: 'toolResult',
      toolCallId: 'tool_1',
      toolName: 'fetch',
      content: [
        { type: 'text', text: 'Attached' },
        { type: 'file', mimeType: 'application/pdf', data: PDF, name: 'out.pdf' },
        { type: 'file', mimeType: 'audio/wav', data: b64('RIFF'), name: 'voice.wav' },
      ],
      isError: false,
      timestamp: 0,
    };
    const body = await send([userMessage('go'), call, result]);
    expect(body.messages[2]).toEqual({
      role: 'user',
      content: [
        {
          toolResult: {
            toolUseId: 'tool_1',
            content: [{ text: 'Attached' }, { document: { format: 'pdf', name: 'out', source: { bytes: PDF } } }],
            status: 'success',
          },
        },
        { audio: { format: 'wav', source: { bytes: b64('RIFF') } } },
      ],
    });
  });
});

describe('BedrockProvider: files Converse cannot take', () => {
  const refused: [string, FileContent, string, string][] = [
    [
      'a fileId',
      { type: 'file', mimeType: 'application/pdf', fileId: 'file-1', name: 'a.pdf' },
      'model_incapable',
      'The file "a.pdf" (application/pdf) in a user message cannot be sent to Bedrock Converse: Bedrock has no file API',
    ],
    [
      'an https URL',
      { type: 'file', mimeType: 'application/pdf', url: 'https://example.com/a.pdf' },
      'model_incapable',
      's3:// URLs only',
    ],
    [
      'an unresolved ref',
      { type: 'file', mimeType: 'application/pdf', ref: `sha256:${'b'.repeat(64)}`, size: 3 },
      'model_incapable',
      'was not resolved to bytes',
    ],
    [
      'an unknown document type',
      { type: 'file', mimeType: 'application/zip', data: b64('PK') },
      'model_incapable',
      'documents are',
    ],
    [
      'an image type Converse lacks',
      { type: 'file', mimeType: 'image/tiff', data: b64('II*') },
      'model_incapable',
      'images are',
    ],
    [
      'data that is not base64',
      { type: 'file', mimeType: 'application/pdf', data: '%%%' },
      'bad_request',
      'not valid base64',
    ],
  ];
  it.each(refused)('%s: a typed error event naming the block, nothing sent', async (_, file, kind, words) => {
    const before = server().requests.length;
    const { events, message } = await collectStream(
      provider().stream(NOVA, [userMessage([{ type: 'text', text: 'x' }, file])]),
    );
    expect(events.map((e) => e.type)).toEqual(['error']);
    expect(message.errorKind).toBe(kind);
    expect(message.errorMessage).toContain(words);
    expect(server().requests.length).toBe(before);
  });

  it('a message holding a document and no text: bad_request before sending (Converse wants a text block with it)', async () => {
    const before = server().requests.length;
    const { message } = await collectStream(
      provider().stream(NOVA, [
        userMessage([{ type: 'file', mimeType: 'application/pdf', data: PDF, name: 'lone.pdf' }]),
      ]),
    );
    expect(message.errorKind).toBe('bad_request');
    expect(message.errorMessage).toBe(
      'The document "lone" in message 1 cannot be sent to Bedrock Converse alone: a message with a document needs a text block too',
    );
    expect(server().requests.length).toBe(before);
  });
});
