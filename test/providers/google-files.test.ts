// File blocks through GoogleProvider and the real @google/genai client against a local server: inlineData for bytes,
// fileData for URLs and Files API files, in user messages and in function responses (inside them on Gemini 3 where
// Gemini takes the type, after them otherwise), and the refusals that are typed error events sent before any request.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AssistantMessage, FileContent, Message, Model, ToolCall } from 'cubepi';
import { GEMINI_FILES_URI, GoogleProvider } from 'cubepi/providers/google';
import { fakeVertexAuth } from './google-recordings.js';
import { geminiText } from './google-wire.js';
import { ReplayServer } from './replay-server.js';
import { collectStream, expectWellFormed } from './stream-harness.js';

const FLASH3: Model = { id: 'gemini-3-flash-preview', provider: 'google', reasoning: true };
const FLASH25: Model = { id: 'gemini-2.5-flash', provider: 'google', reasoning: true };

const PDF = Buffer.from('%PDF-1.4\n%âãÏÓ\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n').toString('base64');
const WAV = Buffer.from('RIFF\x24\x00\x00\x00WAVEfmt ').toString('base64');
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).toString('base64');
const CSV = Buffer.from('city,temp\nOslo,4\n').toString('base64');

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const gemini = () => new GoogleProvider({ apiKey: 'test-key', baseURL: server.url });
const vertex = () =>
  new GoogleProvider({
    vertexai: true,
    project: 'p',
    location: 'us-central1',
    googleAuthOptions: fakeVertexAuth,
    baseURL: server.url,
  });

const user = (...content: (FileContent | { type: 'text'; text: string })[]): Message => ({
  role: 'user',
  content,
  timestamp: 1,
});

/** The parts of the first user content the SDK sent for `message`. */
async function sentParts(message: Message, provider = gemini(), model = FLASH3) {
  server.reply(geminiText(['ok']));
  const stream = await collectStream(provider.stream(model, [message]));
  expect(stream.message.stopReason).toBe('stop');
  return server.requests.at(-1)!.body.contents[0].parts;
}

describe('GoogleProvider: files in user messages', () => {
  it('PDF, audio, video, CSV and Markdown bytes go as inlineData with their MIME types; the name is not sent', async () => {
    const parts = await sentParts(
      user(
        { type: 'text', text: 'Summarise these' },
        { type: 'file', mimeType: 'application/pdf', data: PDF, name: 'report.pdf' },
        { type: 'file', mimeType: 'audio/wav', data: WAV },
        { type: 'file', mimeType: 'video/mp4', data: 'AAAAGGZ0eXBtcDQy' },
        { type: 'file', mimeType: 'text/csv', data: CSV, name: 'temps.csv' },
        { type: 'file', mimeType: 'text/markdown; charset=utf-8', data: 'IyBIaQ==' },
      ),
    );
    expect(parts).toEqual([
      { text: 'Summarise these' },
      { inlineData: { mimeType: 'application/pdf', data: PDF } },
      { inlineData: { mimeType: 'audio/wav', data: WAV } },
      { inlineData: { mimeType: 'video/mp4', data: 'AAAAGGZ0eXBtcDQy' } },
      { inlineData: { mimeType: 'text/csv', data: CSV } },
      { inlineData: { mimeType: 'text/markdown; charset=utf-8', data: 'IyBIaQ==' } },
    ]);
  });

  it('gs:// and https URLs go as fileData for Gemini to fetch; a base64 data: URL goes inline', async () => {
    const parts = await sentParts(
      user(
        { type: 'file', mimeType: 'application/pdf', url: 'gs://bucket/report.pdf' },
        { type: 'file', mimeType: 'audio/mpeg', url: 'https://example.com/clip.mp3' },
        { type: 'file', mimeType: 'text/plain', url: `data:text/plain;base64,aGVsbG8=` },
      ),
    );
    expect(parts).toEqual([
      { fileData: { fileUri: 'gs://bucket/report.pdf', mimeType: 'application/pdf' } },
      { fileData: { fileUri: 'https://example.com/clip.mp3', mimeType: 'audio/mpeg' } },
      { inlineData: { mimeType: 'text/plain', data: 'aGVsbG8=' } },
    ]);
  });

  it('a Files API fileId (files/<id>, a bare id, or its full URI) goes as fileData with the file URI', async () => {
    const uri = `${GEMINI_FILES_URI}files/def456`;
    const parts = await sentParts(
      user(
        { type: 'file', mimeType: 'application/pdf', fileId: 'files/abc-123' },
        { type: 'file', mimeType: 'video/mp4', fileId: 'xyz789' },
        { type: 'file', mimeType: 'audio/ogg', fileId: uri },
      ),
    );
    expect(parts).toEqual([
      {
        fileData: {
          fileUri: 'https://generativelanguage.googleapis.com/v1beta/files/abc-123',
          mimeType: 'application/pdf',
        },
      },
      { fileData: { fileUri: 'https://generativelanguage.googleapis.com/v1beta/files/xyz789', mimeType: 'video/mp4' } },
      { fileData: { fileUri: uri, mimeType: 'audio/ogg' } },
    ]);
  });

  it('Vertex AI: gs:// URLs and bytes are sent', async () => {
    const parts = await sentParts(
      user(
        { type: 'file', mimeType: 'application/pdf', url: 'gs://bucket/a.pdf' },
        { type: 'file', mimeType: 'application/pdf', data: PDF },
      ),
      vertex(),
    );
    expect(parts).toEqual([
      { fileData: { fileUri: 'gs://bucket/a.pdf', mimeType: 'application/pdf' } },
      { inlineData: { mimeType: 'application/pdf', data: PDF } },
    ]);
  });

  it.each([
    [
      'a spreadsheet',
      {
        type: 'file',
        name: 'q3.xlsx',
        mimeType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
        data: 'UEsDBA==',
      },
      gemini,
      /file "q3\.xlsx" \(application\/vnd\.openxml[^)]*\) in a user message: Gemini reads PDF, image, audio, video and text documents.*convert it to PDF or text/,
    ],
    [
      'an ftp URL',
      { type: 'file', mimeType: 'application/pdf', url: 'ftp://host/a.pdf' },
      gemini,
      /file \(application\/pdf\) in a user message: Gemini fetches gs:\/\/ and http\(s\):\/\/ URLs only \(got ftp:\)/,
    ],
    [
      'an unresolved blob ref',
      { type: 'file', mimeType: 'application/pdf', ref: `sha256:${'a'.repeat(64)}`, size: 10 },
      gemini,
      /the blob reference sha256:a{64} was not resolved/,
    ],
    [
      'a fileId on Vertex AI',
      { type: 'file', mimeType: 'application/pdf', fileId: 'files/abc' },
      vertex,
      /Vertex AI has no Files API/,
    ],
    [
      'a fileId that is no Files API name',
      { type: 'file', mimeType: 'application/pdf', fileId: 'file-Abc_XYZ' },
      gemini,
      /"file-Abc_XYZ" is not a Files API file name/,
    ],
    ['a block with no source', { type: 'file', mimeType: 'application/pdf' }, gemini, /has no data, url or fileId/],
  ] as const)('%s: a model_incapable error event naming the block, nothing sent', async (_, block, provider, why) => {
    const stream = await collectStream(provider().stream(FLASH3, [user({ type: 'text', text: 'Read' }, block)]));
    expectWellFormed(stream);
    expect(stream.events.map((e) => e.type)).toEqual(['error']);
    expect(stream.message).toMatchObject({ stopReason: 'error', errorKind: 'model_incapable' });
    expect(stream.message.errorMessage).toMatch(why);
    expect(stream.message.errorMessage).toMatch(/nothing was sent$/);
    expect(server.requests).toHaveLength(0);
  });
});

describe('GoogleProvider: files in tool results', () => {
  const call: ToolCall = { type: 'toolCall', id: 'gcall_r_0', name: 'fetch_docs', arguments: {} };
  const answered = (model: Model): AssistantMessage => ({
    role: 'assistant',
    content: [call],
    stopReason: 'toolUse',
    usage: {
      input: 0,
      output: 0,
      cacheRead: 0,
      cacheWrite: 0,
      reasoning: 0,
      totalTokens: 0,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    provider: 'google',
    model: model.id,
    timestamp: 2,
  });
  const files: FileContent[] = [
    { type: 'file', mimeType: 'application/pdf', data: PDF, name: 'a.pdf' },
    { type: 'file', mimeType: 'image/png', data: PNG },
    { type: 'file', mimeType: 'audio/wav', data: WAV },
    { type: 'file', mimeType: 'text/plain', url: 'https://example.com/notes.txt' },
  ];
  const history = (model: Model): Message[] => [
    { role: 'user', content: 'Fetch the docs', timestamp: 1 },
    answered(model),
    {
      role: 'toolResult',
      toolCallId: call.id,
      toolName: call.name,
      content: [{ type: 'text', text: 'Two documents' }, ...files],
      isError: false,
      timestamp: 3,
    },
  ];

  it('Gemini 3: PDF and PNG bytes inside the functionResponse; audio and the URL as parts right after it', async () => {
    server.reply(geminiText(['ok']));
    await collectStream(gemini().stream(FLASH3, history(FLASH3)));
    expect(server.requests[0]!.body.contents[2]).toEqual({
      role: 'user',
      parts: [
        {
          functionResponse: {
            name: 'fetch_docs',
            response: { output: 'Two documents' },
            parts: [
              { inlineData: { mimeType: 'application/pdf', data: PDF } },
              { inlineData: { mimeType: 'image/png', data: PNG } },
            ],
          },
        },
        { inlineData: { mimeType: 'audio/wav', data: WAV } },
        { fileData: { fileUri: 'https://example.com/notes.txt', mimeType: 'text/plain' } },
      ],
    });
  });

  it('before Gemini 3: every file as a part after the functionResponse, in order', async () => {
    server.reply(geminiText(['ok']));
    await collectStream(gemini().stream(FLASH25, history(FLASH25)));
    expect(server.requests[0]!.body.contents[2].parts).toEqual([
      { functionResponse: { name: 'fetch_docs', response: { output: 'Two documents' } } },
      { inlineData: { mimeType: 'application/pdf', data: PDF } },
      { inlineData: { mimeType: 'image/png', data: PNG } },
      { inlineData: { mimeType: 'audio/wav', data: WAV } },
      { fileData: { fileUri: 'https://example.com/notes.txt', mimeType: 'text/plain' } },
    ]);
  });

  it('a file Gemini cannot take in a tool result is refused naming the tool and the call', async () => {
    const bad: Message[] = [
      ...history(FLASH3).slice(0, 2),
      {
        role: 'toolResult',
        toolCallId: call.id,
        toolName: call.name,
        content: [{ type: 'file', mimeType: 'application/zip', data: 'UEsDBA==' }],
        isError: false,
        timestamp: 3,
      },
    ];
    const stream = await collectStream(gemini().stream(FLASH3, bad));
    expect(stream.message.errorKind).toBe('model_incapable');
    expect(stream.message.errorMessage).toMatch(/file \(application\/zip\) in the result of fetch_docs \(gcall_r_0\)/);
    expect(server.requests).toHaveLength(0);
  });
});
