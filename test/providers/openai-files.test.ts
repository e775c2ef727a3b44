// File blocks on OpenAI Chat Completions and the Responses API, through the real openai SDK against a local server:
// the content parts asserted in the request bodies, and every block the API cannot take refused as a typed error
// event before any request is sent.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  EMPTY_USAGE,
  findModel,
  type FileContent,
  type Message,
  type Model,
  type ProviderErrorKind,
  type ToolResultMessage,
  type UserContent,
} from 'cubepi';
import { OpenAIProvider, OpenAIResponsesProvider, type OpenAICompatName } from 'cubepi/providers/openai';
import { ReplayServer, sse } from './replay-server.js';
import { collectStream, expectWellFormed } from './stream-harness.js';

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const PDF = Buffer.from('%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n').toString('base64');
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).toString('base64');
const WAV = Buffer.from('RIFF\x24\x00\x00\x00WAVEfmt ', 'latin1').toString('base64');
const NOTES = '# Notes\n\nÜmlauts and “quotes” survive.';

const user = (...content: UserContent[]): Message => ({ role: 'user', content, timestamp: 1 });
const file = (fields: Omit<FileContent, 'type'>): FileContent => ({ type: 'file', ...fields });
const toolTurn = (content: ToolResultMessage['content']): Message[] => [
  user({ type: 'text', text: 'Fetch the report' }),
  {
    role: 'assistant',
    content: [{ type: 'toolCall', id: 'call_1', name: 'fetch_report', arguments: {} }],
    stopReason: 'toolUse',
    usage: EMPTY_USAGE,
    provider: 'openai',
    model: 'gpt-4o',
    timestamp: 2,
  },
  { role: 'toolResult', toolCallId: 'call_1', toolName: 'fetch_report', content, isError: false, timestamp: 3 },
];

/** Streams `messages` and expects a refusal: one `error` event of `kind` whose message matches, and no request. */
async function expectRefused(
  stream: ReturnType<OpenAIProvider['stream']>,
  kind: ProviderErrorKind,
  message: RegExp,
): Promise<void> {
  const collected = await collectStream(stream);
  expect(collected.events.map((e) => e.type)).toEqual(['error']);
  expect(collected.message).toMatchObject({ stopReason: 'error', errorKind: kind });
  expect(collected.message.errorMessage).toMatch(message);
  expect(server.requests).toHaveLength(0);
}

describe('OpenAI Chat Completions: files', () => {
  const GPT_4O = findModel('gpt-4o')!;
  const chatBody = () => {
    const chunk = (choices: unknown[], extra: object = {}) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-f', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o', choices, ...extra })}\n\n`;
    return (
      chunk([{ index: 0, delta: { role: 'assistant', content: 'Read.' }, finish_reason: null }]) +
      chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]) +
      chunk([], { usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } }) +
      'data: [DONE]\n\n'
    );
  };
  const provider = (compat?: OpenAICompatName) =>
    new OpenAIProvider({ apiKey: 'test-key', baseURL: `${server.url}/v1`, ...(compat ? { compat } : {}) });
  const send = async (messages: Message[], compat?: OpenAICompatName, model: Model = GPT_4O) => {
    server.reply(sse(chatBody()));
    const stream = await collectStream(provider(compat).stream(model, messages));
    expectWellFormed(stream);
    expect(stream.message.stopReason).toBe('stop');
    return server.requests.at(-1)!.body;
  };

  it('maps each file kind of a user message onto its content part', async () => {
    const body = await send([
      user(
        { type: 'text', text: 'Compare these.' },
        file({ mimeType: 'application/pdf', data: PDF, name: 'report.pdf' }),
        file({ mimeType: 'application/pdf', data: PDF }),
        file({ mimeType: 'application/pdf', fileId: 'file-abc123' }),
        file({ mimeType: 'image/png', data: PNG }),
        file({ mimeType: 'image/jpeg', url: 'https://example.com/cat.jpg' }),
        file({ mimeType: 'audio/wav', data: WAV }),
        file({ mimeType: 'audio/mpeg', data: WAV }),
        file({ mimeType: 'text/markdown; charset=utf-8', data: b64(NOTES), name: 'notes.md' }),
      ),
    ]);
    expect(body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Compare these.' },
          { type: 'file', file: { file_data: `data:application/pdf;base64,${PDF}`, filename: 'report.pdf' } },
          { type: 'file', file: { file_data: `data:application/pdf;base64,${PDF}`, filename: 'file.pdf' } },
          { type: 'file', file: { file_id: 'file-abc123' } },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
          { type: 'input_audio', input_audio: { data: WAV, format: 'wav' } },
          { type: 'input_audio', input_audio: { data: WAV, format: 'mp3' } },
          { type: 'text', text: `<file name="notes.md" type="text/markdown; charset=utf-8">\n${NOTES}\n</file>` },
        ],
      },
    ]);
  });

  it('puts a tool’s text file in its tool message and its PDF in one user message after the results', async () => {
    const body = await send(
      toolTurn([
        { type: 'text', text: 'Found two files.' },
        file({ mimeType: 'text/csv', data: b64('a,b\n1,2'), name: 'data.csv' }),
        file({ mimeType: 'application/pdf', data: PDF, name: 'report.pdf' }),
      ]),
    );
    expect(body.messages.slice(2)).toEqual([
      {
        role: 'tool',
        tool_call_id: 'call_1',
        content: 'Found two files.\n<file name="data.csv" type="text/csv">\na,b\n1,2\n</file>',
      },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Files returned by the tools above:' },
          { type: 'file', file: { file_data: `data:application/pdf;base64,${PDF}`, filename: 'report.pdf' } },
        ],
      },
    ]);
  });

  it('says "(see the attached file)" for a tool result that is only a file; images keep their old wording', async () => {
    const onlyFile = await send(toolTurn([file({ mimeType: 'application/pdf', fileId: 'file-1' })]));
    expect(onlyFile.messages[2]).toEqual({ role: 'tool', tool_call_id: 'call_1', content: '(see the attached file)' });
    const onlyImage = await send(toolTurn([{ type: 'image', mimeType: 'image/png', data: PNG }]));
    expect(onlyImage.messages[2].content).toBe('(see the attached image)');
    expect(onlyImage.messages[3].content[0]).toEqual({ type: 'text', text: 'Images returned by the tools above:' });
  });

  it('sends a text file and an image file on a profile that takes no PDF or audio parts', async () => {
    const body = await send(
      [user(file({ mimeType: 'application/json', data: b64('{"a":1}') }), file({ mimeType: 'image/png', data: PNG }))],
      'ollama',
      { id: 'llava', provider: 'ollama' },
    );
    expect(body.messages[0].content).toEqual([
      { type: 'text', text: '<file type="application/json">\n{"a":1}\n</file>' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
    ]);
  });

  it.each([
    [
      'a PDF by URL',
      file({ mimeType: 'application/pdf', url: 'https://example.com/r.pdf', name: 'r.pdf' }),
      'model_incapable',
      /file r\.pdf \(application\/pdf\) in message 1 \(user\), block 2: it fetches no file URLs/,
    ],
    [
      'a Word document',
      file({
        mimeType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
        data: b64('PK'),
      }),
      'model_incapable',
      /block 2: file parts are PDF only, and this is not text/,
    ],
    ['a video', file({ mimeType: 'video/mp4', data: b64('....') }), 'model_incapable', /it takes no video/],
    ['ogg audio', file({ mimeType: 'audio/ogg', data: WAV }), 'model_incapable', /input_audio takes wav and mp3 only/],
    [
      'an uploaded text file',
      file({ mimeType: 'text/plain', fileId: 'file-1' }),
      'model_incapable',
      /an uploaded file is taken for PDFs only/,
    ],
    [
      'an unresolved ref',
      file({ mimeType: 'application/pdf', ref: `sha256:${'a'.repeat(64)}`, size: 10 }),
      'model_incapable',
      /unresolved blob reference \(sha256:a{64}\)/,
    ],
    [
      'a block with no source',
      file({ mimeType: 'application/pdf' }),
      'bad_request',
      /exactly one of data, url, fileId or ref \(it has none\)/,
    ],
    [
      'a block with two sources',
      file({ mimeType: 'application/pdf', data: PDF, url: 'https://example.com/r.pdf' }),
      'bad_request',
      /\(it has data, url\)/,
    ],
    [
      'a text file that is not UTF-8',
      file({ mimeType: 'text/plain', data: Buffer.from([0xff, 0xfe, 0x00, 0xc3]).toString('base64') }),
      'bad_request',
      /its data is not UTF-8 text/,
    ],
  ] as const)('refuses %s before sending, naming the block', async (_what, block, kind, message) => {
    await expectRefused(
      provider().stream(GPT_4O, [user({ type: 'text', text: 'Look:' }, block)]),
      kind,
      new RegExp(`^OpenAI Chat Completions cannot take the .*${message.source}`),
    );
  });

  it('refuses a PDF on vllm and audio on ollama (their profiles take neither), and a file in a tool result', async () => {
    await expectRefused(
      provider('vllm').stream({ id: 'qwen', provider: 'vllm' }, [
        user(file({ mimeType: 'application/pdf', data: PDF })),
      ]),
      'model_incapable',
      /no PDF file parts on the vllm profile/,
    );
    await expectRefused(
      provider('ollama').stream({ id: 'x', provider: 'ollama' }, [user(file({ mimeType: 'audio/wav', data: WAV }))]),
      'model_incapable',
      /no input_audio parts on the ollama profile/,
    );
    await expectRefused(
      provider().stream(
        GPT_4O,
        toolTurn([{ type: 'text', text: 'clip' }, file({ mimeType: 'video/mp4', url: 'https://x/v.mp4' })]),
      ),
      'model_incapable',
      /in message 3 \(toolResult\), block 2/,
    );
  });
});

describe('OpenAI Responses: files', () => {
  const GPT_54 = findModel('gpt-5.4')!;
  const responsesBody = () =>
    [
      { type: 'response.created', response: { id: 'resp_f', model: 'gpt-5.4', status: 'in_progress', output: [] } },
      {
        type: 'response.completed',
        response: {
          id: 'resp_f',
          status: 'completed',
          usage: {
            input_tokens: 3,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens: 0,
            output_tokens_details: { reasoning_tokens: 0 },
            total_tokens: 3,
          },
        },
      },
    ]
      .map((event, i) => `event: ${event.type}\ndata: ${JSON.stringify({ ...event, sequence_number: i })}\n\n`)
      .join('');
  const provider = () => new OpenAIResponsesProvider({ apiKey: 'test-key', baseURL: `${server.url}/v1` });
  const send = async (messages: Message[]) => {
    server.reply(sse(responsesBody()));
    const stream = await collectStream(provider().stream(GPT_54, messages));
    expect(stream.message.stopReason).toBe('stop');
    return server.requests.at(-1)!.body;
  };

  it('maps documents onto input_file (data with a filename, url, id) and images onto input_image', async () => {
    const body = await send([
      user(
        { type: 'text', text: 'Summarise.' },
        file({ mimeType: 'application/pdf', data: PDF, name: 'report.pdf' }),
        file({ mimeType: 'application/pdf', url: 'https://example.com/letter.pdf' }),
        file({ mimeType: 'application/pdf', fileId: 'file-abc' }),
        file({ mimeType: 'text/csv', data: b64('a,b\n1,2') }),
        file({ mimeType: 'text/markdown', data: b64(NOTES), name: 'notes.md' }),
        file({ mimeType: 'image/png', fileId: 'file-img' }),
        file({ mimeType: 'image/png', url: 'https://example.com/p.png' }),
      ),
    ]);
    expect(body.input).toEqual([
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'Summarise.' },
          { type: 'input_file', filename: 'report.pdf', file_data: `data:application/pdf;base64,${PDF}` },
          { type: 'input_file', file_url: 'https://example.com/letter.pdf' },
          { type: 'input_file', file_id: 'file-abc' },
          { type: 'input_file', filename: 'file.csv', file_data: `data:text/csv;base64,${b64('a,b\n1,2')}` },
          { type: 'input_file', filename: 'notes.md', file_data: `data:text/markdown;base64,${b64(NOTES)}` },
          { type: 'input_image', detail: 'auto', file_id: 'file-img' },
          { type: 'input_image', detail: 'auto', image_url: 'https://example.com/p.png' },
        ],
      },
    ]);
  });

  it('puts a tool’s files in its function_call_output list', async () => {
    const body = await send(
      toolTurn([
        { type: 'text', text: 'Here it is.' },
        file({ mimeType: 'application/pdf', data: PDF, name: 'r.pdf' }),
      ]),
    );
    expect(body.input.at(-1)).toEqual({
      type: 'function_call_output',
      call_id: 'call_1',
      output: [
        { type: 'input_text', text: 'Here it is.' },
        { type: 'input_file', filename: 'r.pdf', file_data: `data:application/pdf;base64,${PDF}` },
      ],
    });
    const textOnly = await send(
      toolTurn([
        { type: 'text', text: 'a' },
        { type: 'text', text: 'b' },
      ]),
    );
    expect(textOnly.input.at(-1).output).toBe('a\nb');
  });

  it.each([
    ['audio', file({ mimeType: 'audio/wav', data: WAV }), /it takes no audio input/],
    ['video', file({ mimeType: 'video/mp4', url: 'https://example.com/v.mp4' }), /it takes no video input/],
    ['an unresolved ref', file({ mimeType: 'application/pdf', ref: `sha256:${'b'.repeat(64)}` }), /unresolved blob/],
  ] as const)('refuses %s before sending, naming the block', async (_what, block, message) => {
    await expectRefused(
      provider().stream(GPT_54, [user({ type: 'text', text: 'Look:' }, block)]),
      'model_incapable',
      new RegExp(
        `^OpenAI Responses cannot take the file \\(.*\\) in message 1 \\(user\\), block 2: .*${message.source}`,
      ),
    );
  });
});
