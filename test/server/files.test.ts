// Files from users through the server: useChat file parts (the AI SDK's own DefaultChatTransport) on POST /chat,
// AG-UI media parts (1.0) and binary parts (0.x) on POST /ag-ui, file blocks on POST /threads/:id/runs. What reached
// the agent is read back from the stored thread. Hostile files — bad base64, bytes that are not their MIME type, a
// file over the limit, unknown parts, a blob store ref — are refused naming the part, and nothing is created or stored.
import { RunAgentInputSchema } from '@ag-ui/core/schemas';
import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import { lastValueFrom, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { fromAgentEvents, runEventsUrl } from 'cubepi/client';
import { Agent, MemoryCheckpointer, type Message, type UserContent } from 'cubepi';
import { FauxProvider, fauxMessage } from 'cubepi/testing';
import { toFileBlock } from 'cubepi/server';
import { serve, type Served } from './serve-helpers.js';

const JSON_TYPE = { 'content-type': 'application/json' };
const b64 = (text: string | Uint8Array) => Buffer.from(text).toString('base64');

const PDF = b64('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const CSV = b64('city,temp\nParis,21\n');
const HTML_AS_PDF = b64('<html><body>not a pdf</body></html>');

let served: Served | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

/** A server whose agents answer "got it", counting the threads it made an agent for; `seen`: what the model got. */
async function fileServer(options: { maxFileBytes?: number; maxBodyBytes?: number } = {}) {
  const checkpointer = new MemoryCheckpointer();
  const created: string[] = [];
  const seen: Message[][] = [];
  served = await serve({
    ...options,
    checkpointer,
    flushMs: 0,
    agent: (threadId) => {
      created.push(threadId);
      const provider = new FauxProvider({
        responses: [
          (messages: readonly Message[]) => {
            seen.push([...messages]);
            return fauxMessage('got it');
          },
        ],
      });
      return new Agent({ provider, model: 'faux', checkpointer, threadId });
    },
  });
  return { base: served.base, checkpointer, created, seen };
}

async function storedUserContent(base: string, threadId: string): Promise<readonly UserContent[] | string> {
  const thread = (await (await fetch(`${base}/threads/${threadId}`)).json()) as { messages: Message[] };
  const first = thread.messages[0]!;
  expect(first.role).toBe('user');
  return first.content as readonly UserContent[] | string;
}

async function lastMessage(stream: ReadableStream<UIMessageChunk>): Promise<UIMessage> {
  let last: UIMessage | undefined;
  for await (const message of readUIMessageStream({ stream })) last = message;
  return last!;
}

const post = async (base: string, path: string, body: unknown) => {
  const response = await fetch(`${base}${path}`, { method: 'POST', headers: JSON_TYPE, body: JSON.stringify(body) });
  return {
    status: response.status,
    error: ((await response.json().catch(() => ({}))) as { error?: { code: string; message: string } }).error,
  };
};

const chatBody = (id: string, parts: unknown[]) => ({
  id,
  messages: [{ id: 'u1', role: 'user', parts }],
  trigger: 'submit-message',
});

describe('POST /chat with useChat file parts', () => {
  it("takes the AI SDK transport's file parts: a data: PDF as file data, a PNG as an image, a URL as a file url", async () => {
    const { base, seen } = await fileServer();
    const transport = new DefaultChatTransport({ api: `${base}/chat` });
    const stream = await transport.sendMessages({
      chatId: 'files-1',
      messages: [
        {
          id: 'u1',
          role: 'user',
          parts: [
            { type: 'text', text: 'Summarise these' },
            {
              type: 'file',
              mediaType: 'application/pdf',
              filename: 'report.pdf',
              url: `data:application/pdf;base64,${PDF}`,
            },
            { type: 'file', mediaType: 'image/png', filename: 'dot.png', url: `data:image/png;base64,${PNG}` },
            { type: 'file', mediaType: 'text/csv', filename: 'temps.csv', url: 'https://files.example.com/temps.csv' },
          ],
        },
      ],
      trigger: 'submit-message',
      messageId: undefined,
      abortSignal: undefined,
    });
    const answer = await lastMessage(stream);
    expect(answer.parts.some((part) => part.type === 'text' && part.text === 'got it')).toBe(true);
    const expected = [
      { type: 'text', text: 'Summarise these' },
      {
        type: 'file',
        mimeType: 'application/pdf',
        name: 'report.pdf',
        data: PDF,
        size: Buffer.from(PDF, 'base64').byteLength,
      },
      { type: 'image', mimeType: 'image/png', data: PNG },
      { type: 'file', mimeType: 'text/csv', name: 'temps.csv', url: 'https://files.example.com/temps.csv' },
    ];
    expect(await storedUserContent(base, 'files-1')).toEqual(expected);
    // The model was given the same blocks (the faux provider saw the transcript the runner sent).
    expect(seen[0]![0]).toMatchObject({ role: 'user', content: expected });
  });

  it('takes a message that is only a file, and keeps a text-only message a plain string prompt', async () => {
    const { base } = await fileServer();
    const onlyFile = chatBody('files-2', [
      { type: 'file', mediaType: 'text/csv', filename: 'temps.csv', url: `data:text/csv;base64,${CSV}` },
    ]);
    const response = await fetch(`${base}/chat`, {
      method: 'POST',
      headers: JSON_TYPE,
      body: JSON.stringify(onlyFile),
    });
    expect(response.status).toBe(200);
    await response.text();
    expect(await storedUserContent(base, 'files-2')).toEqual([
      { type: 'file', mimeType: 'text/csv', name: 'temps.csv', data: CSV, size: 19 },
    ]);
    const textOnly = await fetch(`${base}/chat`, {
      method: 'POST',
      headers: JSON_TYPE,
      body: JSON.stringify(chatBody('files-3', [{ type: 'text', text: 'hello' }])),
    });
    await textOnly.text();
    expect(await storedUserContent(base, 'files-3')).toBe('hello');
  });

  it.each([
    [
      'bad base64',
      { type: 'file', mediaType: 'application/pdf', url: 'data:application/pdf;base64,%%%not base64' },
      400,
      'invalid_file',
      /messages\[0\]\.parts\[1\]: the file data is not valid base64/,
    ],
    [
      'an HTML page labelled as a PDF',
      { type: 'file', mediaType: 'application/pdf', url: `data:application/pdf;base64,${HTML_AS_PDF}` },
      400,
      'invalid_file',
      /messages\[0\]\.parts\[1\]: its bytes are not a PDF/,
    ],
    [
      'a data URL whose type is not the part’s',
      { type: 'file', mediaType: 'image/png', url: `data:application/pdf;base64,${PDF}` },
      400,
      'invalid_file',
      /messages\[0\]\.parts\[1\]: the data URL says application\/pdf, the part says image\/png/,
    ],
    [
      'a data URL that is not base64',
      { type: 'file', mediaType: 'text/plain', url: 'data:text/plain,hello' },
      400,
      'invalid_file',
      /messages\[0\]\.parts\[1\]: a data URL must be/,
    ],
    [
      'a javascript: URL',
      { type: 'file', mediaType: 'text/html', url: 'javascript:alert(1)' },
      400,
      'invalid_file',
      /messages\[0\]\.parts\[1\]: a file URL must be an http\(s\) URL/,
    ],
    [
      'a file part without a url',
      { type: 'file', mediaType: 'application/pdf', data: PDF },
      400,
      'invalid_input',
      /messages\[0\]\.parts\[1\]: a file part needs a string `url`/,
    ],
    [
      'a file part without a media type',
      { type: 'file', url: `data:;base64,${PDF}` },
      400,
      'invalid_file',
      /messages\[0\]\.parts\[1\]: a file needs a MIME type/,
    ],
    [
      'an unknown part',
      { type: 'data-weather', data: { city: 'Paris' } },
      400,
      'invalid_input',
      /messages\[0\]\.parts\[1\]: a part of type "data-weather" is not taken/,
    ],
    [
      'an empty file',
      { type: 'file', mediaType: 'text/plain', url: 'data:text/plain;base64,' },
      400,
      'invalid_file',
      /messages\[0\]\.parts\[1\]: the file is empty/,
    ],
  ])('refuses %s naming the part, and creates nothing', async (_name, part, status, code, message) => {
    const { base, created, checkpointer } = await fileServer();
    const answer = await post(base, '/chat', chatBody('hostile', [{ type: 'text', text: 'read this' }, part]));
    expect(answer.status).toBe(status);
    expect(answer.error?.code).toBe(code);
    expect(answer.error?.message).toMatch(message);
    expect(created).toEqual([]);
    expect(await checkpointer.listThreads()).toEqual([]);
  });

  it('refuses a file over maxFileBytes with 413 file_too_large naming the part; a body over the limit with 413', async () => {
    const { base, created, checkpointer } = await fileServer({ maxFileBytes: 64, maxBodyBytes: 4096 });
    const big = b64('x'.repeat(65));
    const answer = await post(
      base,
      '/chat',
      chatBody('big', [{ type: 'file', mediaType: 'text/plain', url: `data:text/plain;base64,${big}` }]),
    );
    expect(answer).toEqual({
      status: 413,
      error: {
        code: 'file_too_large',
        message: 'messages[0].parts[0]: the file is 65 bytes, more than the limit of 64',
      },
    });
    const huge = b64('x'.repeat(4096));
    const body = chatBody('big', [{ type: 'file', mediaType: 'text/plain', url: `data:text/plain;base64,${huge}` }]);
    expect((await post(base, '/chat', body)).error?.code).toBe('body_too_large');
    // At the limit exactly, the file is taken.
    const fits = await fetch(`${base}/chat`, {
      method: 'POST',
      headers: JSON_TYPE,
      body: JSON.stringify(
        chatBody('fits', [
          { type: 'file', mediaType: 'text/plain', url: `data:text/plain;base64,${b64('x'.repeat(64))}` },
        ]),
      ),
    });
    expect(fits.status).toBe(200);
    await fits.text();
    expect(created).toEqual(['fits']);
    expect((await checkpointer.listThreads()).map((t) => t.threadId)).toEqual(['fits']);
  });
});

const agUiInput = (threadId: string, content: unknown) => ({
  threadId,
  runId: 'client-run-1',
  state: {},
  messages: [{ id: 'm1', role: 'user', content }],
  tools: [],
  context: [],
  forwardedProps: {},
});

describe('POST /ag-ui with files', () => {
  it('takes AG-UI 1.0 media parts (data, url and file sources) valid by @ag-ui/core', async () => {
    const { base } = await fileServer();
    const input = RunAgentInputSchema.parse(
      agUiInput('ag-files-1', [
        { type: 'text', text: 'Listen and read' },
        {
          type: 'document',
          source: { type: 'data', value: PDF, mimeType: 'application/pdf' },
          metadata: { filename: 'report.pdf' },
        },
        { type: 'image', source: { type: 'data', value: PNG, mimeType: 'image/png' } },
        { type: 'audio', source: { type: 'url', value: 'https://files.example.com/a.mp3', mimeType: 'audio/mpeg' } },
        {
          type: 'document',
          source: { type: 'file', value: 'file-abc123', provider: 'openai', mimeType: 'application/pdf' },
        },
      ]),
    );
    const response = await fetch(`${base}/ag-ui`, { method: 'POST', headers: JSON_TYPE, body: JSON.stringify(input) });
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('RUN_FINISHED');
    expect(await storedUserContent(base, 'ag-files-1')).toEqual([
      { type: 'text', text: 'Listen and read' },
      {
        type: 'file',
        mimeType: 'application/pdf',
        name: 'report.pdf',
        data: PDF,
        size: Buffer.from(PDF, 'base64').length,
      },
      { type: 'image', mimeType: 'image/png', data: PNG },
      { type: 'file', mimeType: 'audio/mpeg', url: 'https://files.example.com/a.mp3' },
      { type: 'file', mimeType: 'application/pdf', fileId: 'file-abc123' },
    ]);
  });

  it("takes AG-UI 0.x binary parts: data, url, and id as the vendor's file id", async () => {
    const { base } = await fileServer();
    const input = agUiInput('ag-files-2', [
      { type: 'binary', mimeType: 'text/csv', data: CSV, filename: 'temps.csv' },
      { type: 'binary', mimeType: 'application/pdf', url: 'https://files.example.com/r.pdf' },
      { type: 'binary', mimeType: 'application/pdf', id: 'file-xyz' },
    ]);
    const response = await fetch(`${base}/ag-ui`, { method: 'POST', headers: JSON_TYPE, body: JSON.stringify(input) });
    await response.text();
    expect(await storedUserContent(base, 'ag-files-2')).toEqual([
      { type: 'file', mimeType: 'text/csv', name: 'temps.csv', data: CSV, size: 19 },
      { type: 'file', mimeType: 'application/pdf', url: 'https://files.example.com/r.pdf' },
      { type: 'file', mimeType: 'application/pdf', fileId: 'file-xyz' },
    ]);
  });

  it.each([
    [
      'bytes that are not the MIME type',
      { type: 'document', source: { type: 'data', value: HTML_AS_PDF, mimeType: 'application/pdf' } },
      /messages\[0\]\.content\[1\]: its bytes are not a PDF/,
    ],
    [
      'a binary part with two sources',
      { type: 'binary', mimeType: 'application/pdf', data: PDF, id: 'file-1' },
      /messages\[0\]\.content\[1\]: a file needs exactly one of data, url or fileId \(got 2\)/,
    ],
    [
      'an unknown source',
      { type: 'image', source: { type: 'blob', value: 'x' } },
      /messages\[0\]\.content\[1\]: a source of type "blob"/,
    ],
    [
      'an unknown part',
      { type: 'sticker', id: 's1' },
      /messages\[0\]\.content\[1\]: a part of type "sticker" is not taken/,
    ],
  ])('refuses %s with 400 naming the part, and creates nothing', async (_name, part, message) => {
    const { base, created } = await fileServer();
    const answer = await post(base, '/ag-ui', agUiInput('ag-hostile', [{ type: 'text', text: 'x' }, part]));
    expect(answer.status).toBe(400);
    expect(answer.error?.message).toMatch(message);
    expect(created).toEqual([]);
  });
});

describe('POST /threads/:id/runs with file blocks', () => {
  const run = (text: string, ...blocks: unknown[]) => ({
    input: { role: 'user', content: [{ type: 'text', text }, ...blocks], timestamp: 1 },
  });

  it('stores a checked file block as sent', async () => {
    const { base } = await fileServer();
    const file = { type: 'file', mimeType: 'application/pdf', name: 'report.pdf', data: PDF };
    const response = await fetch(`${base}/threads/runs-files/runs`, {
      method: 'POST',
      headers: JSON_TYPE,
      body: JSON.stringify(run('read', file)),
    });
    expect(response.status).toBe(201);
    const { runId } = (await response.json()) as { runId: string };
    const events = await lastValueFrom(fromAgentEvents(runEventsUrl(base, runId)).pipe(toArray()));
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
    expect(await storedUserContent(base, 'runs-files')).toEqual([{ type: 'text', text: 'read' }, file]);
  });

  it.each([
    [
      "a blob store ref (another thread's bytes)",
      { type: 'file', mimeType: 'application/pdf', ref: `sha256:${'0'.repeat(64)}`, size: 10 },
      /input\.content\[1\]: a client sends a file's data, url or fileId, not a ref/,
    ],
    [
      'bytes that are not the MIME type',
      { type: 'file', mimeType: 'image/gif', data: PDF },
      /input\.content\[1\]: its bytes are not a GIF image/,
    ],
    [
      'an image block whose bytes are not its type',
      { type: 'image', mimeType: 'image/jpeg', data: PNG },
      /input\.content\[1\]: its bytes are not a JPEG image/,
    ],
    [
      'a size that is not the data’s',
      { type: 'file', mimeType: 'text/csv', data: CSV, size: 3 },
      /input\.content\[1\]: a file block's `size` \(3\) is not the length of its `data` \(19 bytes\)/,
    ],
  ])('refuses %s with 400 naming the block', async (_name, block, message) => {
    const { base, created } = await fileServer();
    const answer = await post(base, '/threads/runs-hostile/runs', run('x', block));
    expect(answer.status).toBe(400);
    expect(answer.error?.code).toBe('invalid_file');
    expect(answer.error?.message).toMatch(message);
    expect(created).toEqual([]);
  });
});

describe('toFileBlock', () => {
  it('reads every byte of a text file, whatever its padding: a NUL anywhere is refused, valid UTF-8 is taken', () => {
    for (let length = 1; length <= 40; length++) {
      const text = Buffer.from('aé✓'.repeat(20)).subarray(0, length);
      const valid = Buffer.from(text.toString('utf8')).subarray(0, length).equals(text);
      const block = () => toFileBlock({ mimeType: 'text/plain', data: b64(text) }, 'f', 1000);
      if (valid) expect(block()).toMatchObject({ type: 'file', size: length });
      else expect(block).toThrow(/its bytes are not UTF-8 text/);
      for (let at = 0; at < length; at++) {
        const withNul = Buffer.from('a'.repeat(length));
        withNul[at] = 0;
        expect(() => toFileBlock({ mimeType: 'text/csv', data: b64(withNul) }, 'f', 1000)).toThrow(/NUL byte/);
      }
    }
  });

  it('checks a signature from the first bytes of a large file', () => {
    const pdf = Buffer.alloc(1_000_000, 0x41);
    pdf.write('%PDF-1.7', 0);
    expect(toFileBlock({ mimeType: 'application/pdf', data: pdf.toString('base64') }, 'f', 1_000_000)).toMatchObject({
      size: 1_000_000,
    });
    pdf.write('<html>', 0);
    expect(() => toFileBlock({ mimeType: 'application/pdf', data: pdf.toString('base64') }, 'f', 1_000_000)).toThrow(
      'f: its bytes are not a PDF (application/pdf)',
    );
  });
});
