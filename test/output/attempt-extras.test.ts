import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { findModel, type Model } from 'cubepi';
import { attemptExtras, NO_EXTRAS } from '../../src/loop/attempt-extras.js';
import { outputPlanOf } from '../../src/loop/output-plan.js';
import type { RunState } from '../../src/loop/run-state.js';

const model: Model = { id: 'faux-tools', provider: 'faux' };
const runWith = (output?: z.ZodType, tools: readonly unknown[] = []) =>
  ({
    reasoning: undefined,
    tools,
    output,
    outputPlan: output === undefined ? undefined : outputPlanOf(output),
  }) as unknown as RunState;

describe('attemptExtras', () => {
  it('is NO_EXTRAS itself for a run without output or reasoning (nothing allocated per turn)', () => {
    const run = runWith();
    expect(attemptExtras(run, model)).toBe(NO_EXTRAS);
    expect(attemptExtras(run, { id: 'other', provider: 'x' })).toBe(NO_EXTRAS);
  });

  it('resolves a model once per output spec: the same frozen extras on every later attempt', () => {
    const schema = z.object({ a: z.string() });
    const first = attemptExtras(runWith(schema), model);
    expect(first.output).toEqual({ mode: 'tool', toolName: 'final_answer' });
    expect(Object.isFrozen(first)).toBe(true);
    expect(attemptExtras(runWith(schema), model)).toBe(first);
    // Another model of the same spec is resolved for itself.
    const plain = attemptExtras(runWith(schema), { id: 'p', provider: 'faux', tools: false });
    expect(plain.output).toEqual({ mode: 'prompt' });
    expect(plain.instructions).toMatch(/^Answer with only a JSON value that matches this JSON Schema:\n/);
  });

  it('takes model facts from the model table for a known id (a gpt-4.1 given by id is asked natively)', () => {
    expect(findModel('gpt-4.1')?.structuredOutput).toBe('json_schema'); // the table is loaded (the cubepi entry)
    const extras = attemptExtras(runWith(z.object({ a: z.string() })), { id: 'gpt-4.1', provider: 'openai' });
    expect(extras.output).toEqual({ mode: 'native' });
    expect(extras.native).toMatchObject({ name: 'answer', strict: true });
  });

  it('asks a Gemini before 3 natively only without tools (it answers 400 to responseJsonSchema with functions)', () => {
    const schema = z.object({ a: z.string() });
    const tool = { name: 'lookup' };
    const gemini25 = { id: 'gemini-2.5-flash', provider: 'google' };
    const gemini3 = { id: 'gemini-3.5-flash', provider: 'google' };
    expect(attemptExtras(runWith(schema), gemini25).output).toEqual({ mode: 'native' });
    expect(attemptExtras(runWith(schema, [tool]), gemini25).output).toEqual({ mode: 'tool', toolName: 'final_answer' });
    expect(attemptExtras(runWith(schema, [tool]), gemini3).output).toEqual({ mode: 'native' });
    // A fixed native mode on such a run is refused before the request, so `fallback` moves on.
    const fixed = outputPlanOf({ schema, mode: 'native' });
    const run = { reasoning: undefined, tools: [tool], output: { schema, mode: 'native' }, outputPlan: fixed };
    expect(attemptExtras(run as unknown as RunState, gemini25).refused).toMatch(/together with tools/);
  });
});
