// Which stored runs are lost (started, never ended) and how they are closed: the rules the restart test relies on.
import { describe, expect, it } from 'vitest';
import type { Message } from 'cubepi';
import { fauxMessage, fauxToolCall } from 'cubepi/testing';
import { closeLostRun, findLostRun } from '../../src/server/lost-run.js';

const prompt: Message = { role: 'user', content: 'Go', timestamp: 1, metadata: { 'cubepi:run': 'run_a' } };
const call = fauxMessage([fauxToolCall('lookup', { word: 'cube' })]);

describe('findLostRun', () => {
  it('finds a server run with no final assistant message, and closes each open call once', () => {
    expect(findLostRun([prompt], {})).toEqual({ runId: 'run_a', from: 0, to: 1, open: true });
    const messages = [prompt, call];
    const lost = findLostRun(messages, {});
    expect(lost).toMatchObject({ runId: 'run_a', open: true });
    const closing = closeLostRun(messages, 'run_a');
    expect(closing.map((m) => m.role)).toEqual(['toolResult', 'assistant']);
    expect(closing[0]).toMatchObject({ outcome: 'interrupted', isError: true });
    const closed = [...messages, ...closing];
    expect(findLostRun(closed, {})).toEqual({ runId: 'run_a', from: 0, to: 4, open: false });
    expect(findLostRun(closed, {}, 'run_a')).toMatchObject({ open: false });
    expect(findLostRun(closed, {}, 'run_other')).toBeUndefined();
  });

  it('leaves ended runs, suspended runs (a pending approval) and untagged prompts alone', () => {
    expect(findLostRun([prompt, fauxMessage('done')], {})).toBeUndefined();
    expect(findLostRun([prompt, call], { 'cubepi:approvals': { requests: [], deferred: [] } })).toBeUndefined();
    expect(findLostRun([{ role: 'user', content: 'Go', timestamp: 1 }], {})).toBeUndefined();
  });
});
