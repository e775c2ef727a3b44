// Property: tool-result normalisation. Whatever a tool returns, the run answers its call with exactly one result, and
// the stored result is well-formed: the tool's own when it is valid, an error result saying what was wrong otherwise
// (issue 15, defect 3).
//
// Cases per run (seeded, reproducible): 10,000 raw results through the boundary check against an independent oracle
// (a zod schema); 1,000 of them returned by a tool in a real Agent run, the stored message checked.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, defineTool, MemoryCheckpointer, type AgentToolResult, type ToolResultMessage } from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
// Internal: the boundary check itself, to hold it to the oracle on many more cases than full runs would allow.
import { toolResultProblem } from '../../src/types/check-tool-result.js';

const SEED = 0x15_0003;

/** What a valid result is, written without the code under test. */
const block = z.union([
  z.object({ type: z.literal('text'), text: z.string() }),
  z.object({ type: z.literal('image'), data: z.string(), mimeType: z.string() }),
]);
const resultSchema = z.object({
  content: z.array(block),
  isError: z.boolean().optional(),
  terminate: z.boolean().optional(),
  details: z.unknown().optional(),
});
function isValid(raw: unknown): boolean {
  if (!resultSchema.safeParse(raw).success) return false;
  try {
    JSON.stringify((raw as { details?: unknown }).details);
    return true;
  } catch {
    return false;
  }
}

const cycle = () => {
  const node: Record<string, unknown> = {};
  node.self = node;
  return node;
};
const anyValue = fc.oneof(
  fc.constant(null),
  fc.constant(undefined),
  fc.integer(),
  fc.boolean(),
  fc.string({ maxLength: 8 }),
  fc.constant([]),
  fc.constant({}),
);
const goodBlock = fc.oneof(
  fc.record({ type: fc.constant('text'), text: fc.string({ maxLength: 20 }) }),
  fc.record({
    type: fc.constant('image'),
    data: fc.base64String({ maxLength: 16 }),
    mimeType: fc.constant('image/png'),
  }),
);
const badBlock = fc.oneof(
  anyValue,
  fc.record({ type: fc.constant('text'), text: anyValue }),
  fc.record({ type: fc.constant('image'), data: anyValue, mimeType: anyValue }),
  fc.record({ type: fc.constantFrom('video', 'toolCall', 'thinking', 'TEXT', ''), text: fc.string({ maxLength: 4 }) }),
);
const details = fc.oneof(
  { weight: 4, arbitrary: fc.constant(undefined) },
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  { weight: 1, arbitrary: fc.constant({ n: BigInt(1) }) },
  { weight: 1, arbitrary: fc.constant(null).map(cycle) },
);
const maybeFlag = fc.oneof(
  { weight: 4, arbitrary: fc.constant(undefined) },
  { weight: 4, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: anyValue },
);
/** Mostly results that look right, some of them broken in one place; a few that are not results at all. */
const rawResult = fc.oneof(
  {
    weight: 8,
    arbitrary: fc
      .record({
        content: fc.array(fc.oneof({ weight: 6, arbitrary: goodBlock }, { weight: 1, arbitrary: badBlock }), {
          maxLength: 4,
        }),
        isError: maybeFlag,
        terminate: fc.oneof(fc.constant(undefined), fc.constant(false), anyValue),
        details,
      })
      .map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined))),
  },
  { weight: 1, arbitrary: anyValue },
);

describe('tool results (property)', () => {
  it('the boundary check accepts exactly the valid results (10,000 cases)', () => {
    fc.assert(
      fc.property(rawResult, (raw) => {
        const isResultShaped =
          typeof raw === 'object' && raw !== null && Array.isArray((raw as { content?: unknown }).content);
        if (!isResultShaped) return; // strings and non-results are decided before the check (see the run below)
        const problem = toolResultProblem(raw);
        expect(problem === undefined, JSON.stringify(problem)).toBe(isValid(raw));
      }),
      { seed: SEED, numRuns: 10_000 },
    );
  });

  it('in a run, every call gets one well-formed stored result: the tool’s own if valid, else an error (1,000 runs)', async () => {
    await fc.assert(
      fc.asyncProperty(rawResult, async (raw) => {
        const checkpointer = new MemoryCheckpointer();
        const agent = new Agent({
          provider: new FauxProvider({
            responses: [fauxMessage([fauxToolCall('t', {}, { id: 'c1' })]), fauxMessage('ok')],
          }),
          model: 'faux',
          tools: [
            defineTool({ name: 't', description: '', parameters: z.object({}), execute: () => raw as AgentToolResult }),
          ],
          checkpointer,
          threadId: 'p',
        });
        await agent.prompt('go');
        const stored = (await checkpointer.load('p'))!.messages;
        const results = stored.filter((m): m is ToolResultMessage => m.role === 'toolResult');
        expect(results).toHaveLength(1);
        const [result] = results;
        expect(resultSchema.safeParse({ content: result!.content, isError: result!.isError }).success).toBe(true);
        const valid = typeof raw === 'string' || isValid(raw);
        if (valid && typeof raw !== 'string') {
          expect(result!.content).toEqual((raw as AgentToolResult).content);
          expect(result!.isError).toBe((raw as AgentToolResult).isError === true);
        } else if (!valid) {
          expect(result!.isError).toBe(true);
          expect(result!.content).toEqual([
            { type: 'text', text: expect.stringMatching(/^Tool t returned an invalid result/) },
          ]);
        }
        // A valid `terminate: true` (the batch's only result) ends the run after the batch; else the model answers.
        const terminated = valid && (raw as AgentToolResult).terminate === true;
        expect(stored.at(-1)).toMatchObject(
          terminated ? { role: 'toolResult' } : { role: 'assistant', stopReason: 'stop' },
        );
      }),
      { seed: SEED, numRuns: 1_000 },
    );
  });
});
