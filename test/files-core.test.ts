// File blocks in the core: the validation of every file a prompt, a transcript or a tool result holds (one source,
// base64, bytes against the MIME type, a size limit), the capability check by file kind, and files in the estimate.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  base64ByteLength,
  ConfigurationError,
  defineTool,
  estimateFileTokens,
  estimateTokens,
  fallback,
  fileProblem,
  InvalidInputError,
  modelIncapability,
  textOf,
  type AgentEvent,
  type FileContent,
  type Message,
  type ModelAttemptEvent,
  type ToolResultMessage,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';

const b64 = (bytes: Uint8Array | string) =>
  Buffer.from(typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes).toString('base64');

/** A PDF of `pages` page objects (uncompressed, as a small generator writes one). */
function pdf(pages: number): string {
  const objects = Array.from({ length: pages }, (_, i) => `${i + 3} 0 obj << /Type /Page /Parent 2 0 R >> endobj\n`);
  return `%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Count ${pages} >> endobj\n${objects.join('')}%%EOF\n`;
}
/** A WAV file of `seconds` of silence at `byteRate` bytes a second. */
function wav(seconds: number, byteRate = 32_000): Buffer {
  const data = Buffer.alloc(Math.round(seconds * byteRate));
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + data.length, 4);
  header.write('WAVEfmt ', 8, 'latin1');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(byteRate / 2, 24);
  header.writeUInt32LE(byteRate, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(data.length, 40);
  return Buffer.concat([header, data]);
}

const PDF = b64(pdf(2));
const PNG = b64(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]));
const SAMPLES: Record<string, string> = {
  'application/pdf': PDF,
  'audio/wav': b64(wav(0.01)),
  'audio/mpeg': b64('ID3\x04\x00\x00\x00\x00\x00\x00rest'),
  'audio/flac': b64('fLaC\x00\x00\x00\x22'),
  'audio/ogg': b64('OggS\x00\x02\x00\x00'),
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': b64('PK\x03\x04\x14\x00\x06\x00'),
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': b64('PK\x03\x04\x14\x00\x06\x00'),
  'text/csv': b64('a,b\n1,2\n'),
};
const file = (fields: Partial<FileContent>): FileContent => ({ type: 'file', mimeType: 'application/pdf', ...fields });
const prompt = (...content: unknown[]) => ({ role: 'user', content, timestamp: 1 }) as Message;

describe('file validation', () => {
  it('accepts each sniffed type whose bytes are that type, and text it does not sniff', () => {
    for (const [mimeType, data] of Object.entries(SAMPLES)) {
      expect(fileProblem(file({ mimeType, data })), mimeType).toBeUndefined();
    }
    // An MP3 without an ID3 tag starts with an MPEG frame sync.
    expect(fileProblem(file({ mimeType: 'audio/mpeg', data: b64('\xff\xfb\x90\x64') }))).toBeUndefined();
    // A header after a little junk is still a PDF (readers accept it in the first 1,024 bytes).
    expect(fileProblem(file({ data: b64(`\n\n${pdf(1)}`) }))).toBeUndefined();
    expect(fileProblem(file({ mimeType: 'text/plain; charset=utf-8', data: b64('héllo') }))).toBeUndefined();
    expect(fileProblem(file({ url: 'https://example.com/report.pdf' }))).toBeUndefined();
    expect(fileProblem(file({ fileId: 'file-abc123' }))).toBeUndefined();
    expect(fileProblem(file({ ref: `sha256:${'a'.repeat(64)}`, size: 10 }))).toBeUndefined();
  });

  it.each([
    ['no source', file({}), 'needs one of `data`, `url`, `fileId` or `ref`'],
    [
      'two sources',
      file({ data: PDF, url: 'https://x.test/a.pdf' }),
      'exactly one of `data`, `url`, `fileId` or `ref` (got data and url)',
    ],
    ['no MIME type', { type: 'file', data: PDF }, 'needs a `mimeType` of the form type/subtype (got undefined)'],
    ['a MIME type without a subtype', file({ mimeType: 'pdf', data: PDF }), 'of the form type/subtype (got "pdf")'],
    ['data that is not base64', file({ data: 'not base64!' }), '`data` must be a base64 string'],
    ['base64 of an impossible length', file({ data: 'QUJDR' }), '`data` must be a base64 string'],
    ['empty data', file({ data: '' }), '`data` is empty'],
    ['PNG bytes declared a PDF', file({ data: PNG }), 'declared application/pdf are not a PDF (%PDF-)'],
    ['a PDF declared WAV', file({ mimeType: 'audio/wav', data: PDF }), 'are not a WAV file (RIFF…WAVE)'],
    ['a PDF declared MP3', file({ mimeType: 'audio/mpeg', data: PDF }), 'are not an MP3 file'],
    ['a PDF declared FLAC', file({ mimeType: 'audio/flac', data: PDF }), 'are not a FLAC file'],
    ['a PDF declared Ogg', file({ mimeType: 'audio/ogg', data: PDF }), 'are not an Ogg file'],
    [
      'a PDF declared xlsx',
      file({ mimeType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', data: PDF }),
      'are not a ZIP container',
    ],
    ['a relative url', file({ url: 'report.pdf' }), '`url` must be an absolute URL (got "report.pdf")'],
    ['an empty fileId', file({ fileId: '' }), '`fileId` must be a non-empty string'],
    ['a ref that is not an address', file({ ref: 'sha256:xyz', size: 1 }), '`ref` must be "sha256:"'],
    ['a ref without its size', file({ ref: `sha256:${'b'.repeat(64)}` }), 'with a `ref` needs its `size`'],
    ['a size that is not the data’s', file({ data: PDF, size: 3 }), '`size` (3) is not the length of its `data`'],
    ['a negative size', file({ url: 'https://x.test/a', size: -1 }), '`size` must be a non-negative integer'],
    ['a name that is not a string', file({ data: PDF, name: 7 as never }), '`name` must be a string'],
  ])('refuses %s', (_what, block, message) => {
    expect(fileProblem(block)).toContain(message);
  });

  it('counts base64 bytes without decoding, padded or not', () => {
    expect(base64ByteLength(b64('abc'))).toBe(3);
    expect(base64ByteLength(b64('abcd'))).toBe(4);
    expect(base64ByteLength(b64('abcd').replace(/=+$/, ''))).toBe(4);
    expect(base64ByteLength('QUJD=')).toBeUndefined();
    expect(base64ByteLength('QU JD')).toBeUndefined();
  });

  it('a prompt with a bad file is an InvalidInputError naming the block; nothing is sent or added', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage('read it')] });
    const agent = new Agent({ provider: faux, model: 'faux' });
    const bad = prompt({ type: 'text', text: 'summarise' }, file({ data: PNG, name: 'report.pdf' }));
    const error = await agent.prompt([prompt({ type: 'text', text: 'first' }), bad]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as Error).message).toBe(
      'prompt[1].content[1]: the bytes of a file block declared application/pdf are not a PDF (%PDF-)',
    );
    expect(faux.callCount).toBe(0);
    expect(agent.state.messages).toEqual([]);
    // The same file with its real bytes goes through.
    await agent.prompt(prompt({ type: 'text', text: 'summarise' }, file({ data: PDF, name: 'report.pdf' })));
    expect(agent.state.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(() => agent.steer(prompt(file({})))).toThrow('steer.content[0]: a file block needs one of');
  });

  it('maxFileBytes: the default is 20 MiB; an Agent option lowers it for prompts and its transcript', async () => {
    const big = b64(pdf(1).padEnd(2_000, ' '));
    const faux = new FauxProvider({ responses: [fauxMessage('ok')] });
    const agent = new Agent({ provider: faux, model: 'faux', maxFileBytes: 1_000 });
    await expect(agent.prompt(prompt(file({ data: big })))).rejects.toThrow(
      'prompt.content[0]: the file (application/pdf, 2000 bytes) is over the 1000-byte limit (maxFileBytes)',
    );
    // A file known only by reference or id counts by its stated size.
    expect(fileProblem(file({ fileId: 'f', size: 5_000 }), 1_000)).toContain('5000 bytes) is over the 1000-byte');
    expect(fileProblem(file({ data: big }))).toBeUndefined();
    expect(fileProblem(file({ url: 'https://x.test/a', size: 20 * 1024 * 1024 + 1 }))).toContain('over the 20971520');
    expect(
      () => new Agent({ provider: faux, model: 'faux', maxFileBytes: 1_000, messages: [prompt(file({ data: big }))] }),
    ).toThrow(ConfigurationError);
    expect(() => new Agent({ provider: faux, model: 'faux', maxFileBytes: 0 })).toThrow(
      '`maxFileBytes` must be a positive integer',
    );
  });

  it('a tool result with a bad file becomes an error result saying why; a good one reaches the model', async () => {
    const fetchDoc = defineTool({
      name: 'fetch_doc',
      description: 'Fetches a document',
      parameters: z.object({ good: z.boolean() }),
      execute: (_id, { good }) => ({
        content: [{ type: 'file', mimeType: 'application/pdf', data: good ? PDF : PNG, name: 'doc.pdf' }],
      }),
    });
    const seen: Message[][] = [];
    const faux = new FauxProvider({
      responses: [
        fauxMessage([fauxToolCall('fetch_doc', { good: false }, { id: 'c1' })], { stopReason: 'toolUse' }),
        (messages) => {
          seen.push([...messages]);
          return fauxMessage([fauxToolCall('fetch_doc', { good: true }, { id: 'c2' })], { stopReason: 'toolUse' });
        },
        (messages) => {
          seen.push([...messages]);
          return fauxMessage('done');
        },
      ],
    });
    const agent = new Agent({ provider: faux, model: 'faux', tools: [fetchDoc] });
    await agent.prompt('read the docs');
    const results = agent.state.messages.filter((m): m is ToolResultMessage => m.role === 'toolResult');
    expect(results[0]!.isError).toBe(true);
    expect(textOf(results[0]!)).toContain(
      'content[0] is not a valid file block: the bytes of a file block declared application/pdf are not a PDF',
    );
    expect(results[1]!.isError).toBe(false);
    expect(results[1]!.content).toEqual([{ type: 'file', mimeType: 'application/pdf', data: PDF, name: 'doc.pdf' }]);
    expect(seen[1]!.at(-1)).toMatchObject({ role: 'toolResult', content: [{ type: 'file', data: PDF }] });
  });
});

describe('files and model capabilities', () => {
  const request = (messages: Message[]) => ({ messages, tools: [] });

  it('refuses a file whose kind the model does not take, by MIME type', () => {
    const textOnly = { id: 'm', provider: 'p', input: ['text', 'image'] as const };
    for (const [mimeType, kind] of [
      ['application/pdf', 'pdf'],
      ['audio/wav', 'audio'],
      ['video/mp4', 'video'],
      ['text/csv', 'file'],
    ] as const) {
      expect(modelIncapability(textOnly, request([prompt(file({ mimeType, fileId: 'f' }))])), mimeType).toEqual({
        reason: 'input',
        kind,
        message: `Model m cannot take ${kind} input`,
      });
    }
    expect(
      modelIncapability(textOnly, request([prompt(file({ mimeType: 'image/png', url: 'https://x.test/a.png' }))])),
    ).toBe(undefined);
    // The table's facts: gpt-4.1 takes PDFs but not audio; Gemini takes audio.
    const audio = request([prompt(file({ mimeType: 'audio/wav', data: SAMPLES['audio/wav'] }))]);
    expect(modelIncapability({ id: 'gpt-4.1', provider: 'openai' }, audio)).toMatchObject({ kind: 'audio' });
    expect(modelIncapability({ id: 'gemini-2.5-flash', provider: 'google' }, audio)).toBeUndefined();
    expect(modelIncapability({ id: 'gpt-4.1', provider: 'openai' }, request([prompt(file({ data: PDF }))]))).toBe(
      undefined,
    );
  });

  it('a run with audio falls back past a model that cannot hear it, without calling it', async () => {
    const primary = new FauxProvider({ responses: [fauxMessage('never')] });
    const backup = new FauxProvider({ id: 'backup', responses: [fauxMessage('I hear silence')] });
    const agent = new Agent({
      provider: primary,
      model: { id: 'gpt-4.1', provider: 'faux' },
      middleware: [fallback([{ provider: backup, model: { id: 'gemini-2.5-flash', provider: 'backup' } }])],
    });
    const events: AgentEvent[] = [];
    agent.subscribe((event) => {
      events.push(event);
    });
    await agent.prompt(
      prompt({ type: 'text', text: 'listen' }, file({ mimeType: 'audio/wav', data: SAMPLES['audio/wav'] })),
    );
    const attempts = events.filter((e): e is ModelAttemptEvent => e.type === 'model_attempt');
    expect(attempts.map((a) => [a.model, a.incapable?.reason])).toEqual([
      ['gpt-4.1', 'input'],
      ['gemini-2.5-flash', undefined],
    ]);
    expect(primary.callCount).toBe(0);
    expect(textOf(agent.state.messages.at(-1)!)).toBe('I hear silence');
  });
});

describe('files in the token estimate', () => {
  const rates = { charsPerToken: 4, image: 765, pdfPage: 1_800, audioSecond: 10, videoSecond: 300 };

  it('a PDF by its pages, counted in the bytes, else by size', () => {
    expect(estimateFileTokens(file({ data: b64(pdf(3)) }), rates)).toBe(3 * 1_800);
    expect(estimateFileTokens(file({ data: b64(pdf(12)) }), rates)).toBe(12 * 1_800);
    // A PDF whose pages are in compressed object streams: 50 KB a page.
    const compressed = b64(`%PDF-1.7\n${'x'.repeat(149_990)}`);
    expect(estimateFileTokens(file({ data: compressed }), rates)).toBe(3 * 1_800);
    expect(estimateFileTokens(file({ ref: `sha256:${'c'.repeat(64)}`, size: 500_000 }), rates)).toBe(10 * 1_800);
  });

  it('audio by its seconds (a WAV header’s byte rate, else 16 KB a second), text by its length', () => {
    expect(estimateFileTokens(file({ mimeType: 'audio/wav', data: b64(wav(3, 32_000)) }), rates)).toBe(31);
    expect(
      estimateFileTokens(file({ mimeType: 'audio/mpeg', size: 160_000, url: 'https://x.test/a.mp3' }), rates),
    ).toBe(100);
    expect(estimateFileTokens(file({ mimeType: 'text/csv', data: b64('x'.repeat(4_000)) }), rates)).toBe(1_000);
    expect(estimateFileTokens(file({ mimeType: 'video/mp4', size: 2_000_000, fileId: 'v' }), rates)).toBe(600);
    expect(estimateFileTokens(file({ mimeType: 'image/png', data: PNG }), rates)).toBe(765);
    expect(estimateFileTokens(file({ url: 'https://x.test/unknown.pdf' }), rates)).toBe(1_000);
  });

  it('estimateTokens counts a file block, so a big PDF is over a small context window', () => {
    const model = { id: 'm', provider: 'openai', contextWindow: 10_000 };
    const plain = estimateTokens({ model, messages: [prompt({ type: 'text', text: 'read' })] });
    const withPdf = estimateTokens({
      model,
      messages: [prompt({ type: 'text', text: 'read' }, file({ data: b64(pdf(3)) }))],
    });
    expect(withPdf - plain).toBe(3 * 1_800);
    const big = oneMessage(prompt(file({ data: b64(pdf(6)) })));
    expect(modelIncapability(model, big)).toMatchObject({ reason: 'context_window', contextWindow: 10_000 });
  });
});

function oneMessage(message: Message) {
  return { messages: [message], tools: [] };
}
