// Property: the loop's capability check reads a run's transcript incrementally (`TranscriptScan`: the input kinds its
// messages need, and their estimated tokens per provider family, remembered between model calls), and that answers
// exactly as `modelIncapability` does reading everything. For any transcript grown by appends (user messages and tool
// results holding text, images and files of many MIME types, assistant answers), checked after each append against
// models of each provider family with any set of input kinds and context windows on either side of the estimate —
// and for lists that are not the transcript (a copy, a slice a hook might send), which the scan reads whole — each
// answer (missing kind, tokens, the whole verdict) equals the full scan's.
//
// Cases per run (seeded, reproducible): 200 transcripts of up to 30 appends.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  EMPTY_USAGE,
  estimateMessageTokens,
  modelIncapability,
  type Message,
  type Model,
  type ModelInputKind,
} from 'cubepi';
import { FULL_SCAN, modelIncapabilityWith } from '../../src/middleware/model-incapability.js';
import { TranscriptScan } from '../../src/loop/transcript-scan.js';

const SEED = 0x35_0002;

const KINDS: readonly ModelInputKind[] = ['text', 'image', 'pdf', 'audio', 'video', 'file'];
const MIME = ['application/pdf', 'image/png', 'audio/wav', 'video/mp4', 'text/csv', 'application/zip', 'text/plain'];

const textArb = fc.string({ maxLength: 40 });
const blockArb = fc.oneof(
  textArb.map((text) => ({ type: 'text' as const, text })),
  fc.constant({ type: 'image' as const, data: 'iVBORw0KGgo=', mimeType: 'image/png' }),
  fc.constantFrom(...MIME).map((mimeType) => ({ type: 'file' as const, mimeType, data: 'AAAA', size: 3 })),
);
const messageArb: fc.Arbitrary<Message> = fc.oneof(
  textArb.map((content): Message => ({ role: 'user', content, timestamp: 1 })),
  fc.array(blockArb, { maxLength: 4 }).map((content): Message => ({ role: 'user', content, timestamp: 1 })),
  fc.array(blockArb, { minLength: 1, maxLength: 3 }).map((content): Message => ({
    role: 'toolResult',
    toolCallId: 'c',
    toolName: 't',
    content: content.filter((block) => block.type !== 'file'),
    isError: false,
    timestamp: 1,
  })),
  textArb.map((text): Message => ({
    role: 'assistant',
    content: [{ type: 'text', text }],
    provider: 'faux',
    model: 'faux',
    usage: EMPTY_USAGE,
    stopReason: 'stop',
    timestamp: 1,
  })),
);
const modelArb = fc.record({
  provider: fc.constantFrom('anthropic', 'openai', 'ollama'),
  input: fc.subarray([...KINDS]),
  contextWindow: fc.integer({ min: 10, max: 600 }),
});

describe('TranscriptScan (the capability check, read incrementally)', () => {
  it('answers as a full scan after every append, for the transcript and for any other list', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.array(messageArb, { maxLength: 4 }), fc.array(modelArb, { minLength: 1, maxLength: 3 })), {
          maxLength: 30,
        }),
        (steps) => {
          const transcript: Message[] = [];
          const scan = new TranscriptScan(transcript);
          for (const [appended, models] of steps) {
            transcript.push(...appended);
            for (const facts of models) {
              const model: Model = { id: 'scan-test-model', ...facts };
              for (const messages of [transcript, transcript.slice(1)]) {
                expect(scan.missingInput(messages, facts.input)).toBe(FULL_SCAN.missingInput(messages, facts.input));
                expect(scan.messageTokens(model, messages)).toBe(estimateMessageTokens(model, messages));
                const request = { messages, systemPrompt: 'Be brief.' };
                expect(modelIncapabilityWith(model, request, scan)).toEqual(modelIncapability(model, request));
              }
            }
          }
        },
      ),
      { seed: SEED, numRuns: 200 },
    );
  });

  it('finds a kind the transcript needs whichever message brought it first, and only once it is there', () => {
    const transcript: Message[] = [{ role: 'user', content: 'hello', timestamp: 1 }];
    const scan = new TranscriptScan(transcript);
    expect(scan.missingInput(transcript, ['text'])).toBeUndefined();
    transcript.push({
      role: 'user',
      content: [{ type: 'file', mimeType: 'application/pdf', data: 'AAAA' }],
      timestamp: 2,
    });
    transcript.push({ role: 'user', content: [{ type: 'image', data: 'AA==', mimeType: 'image/png' }], timestamp: 3 });
    expect(scan.missingInput(transcript, ['text'])).toBe('pdf');
    expect(scan.missingInput(transcript, ['text', 'pdf'])).toBe('image');
    expect(scan.missingInput(transcript, ['text', 'pdf', 'image'])).toBeUndefined();
  });
});
