// cubepi/evals: a two-tool agent recorded live, then replayed from its recordings in virtual time (the same report,
// byte for byte, every time), and the bad inputs: a dataset line that is not JSON, a case missing fields, a scorer that
// throws, a recording that runs out.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Observable } from 'rxjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, defineTool, type Middleware } from 'cubepi';
import {
  compare,
  cost,
  EvalDatasetError,
  evaluate,
  exact,
  formatComparison,
  formatReport,
  GRADER_PROMPT,
  graderPrompt,
  latency,
  loadDataset,
  loadRecordings,
  modelGraded,
  parseDataset,
  parseRecordings,
  parseReport,
  recordProvider,
  reportToJSONL,
  schema,
  tokens,
  toolChoice,
  trajectory,
  turns,
  type EvalAgentContext,
  type EvalCase,
  type RecordedCall,
  type Scorer,
} from 'cubepi/evals';
import { evalMatchers } from 'cubepi/evals/vitest';
import { FauxProvider, fauxMessage, fauxText, fauxToolCall } from 'cubepi/testing';

expect.extend(evalMatchers);
declare module 'vitest' {
  interface Assertion {
    toPass(threshold?: number): void;
  }
}

const dir = mkdtempSync(join(tmpdir(), 'cubepi-evals-'));

// The two tools: answer synchronously, so the whole replayed run is on RxJS schedulers (virtual time).
const weather = defineTool({
  name: 'weather',
  description: 'Current temperature of a city, in °C',
  parameters: z.object({ city: z.string() }),
  execute: (_id, { city }) => ({ content: [{ type: 'text', text: city === 'Paris' ? '20' : '5' }] }),
});
const convert = defineTool({
  name: 'convert',
  description: 'Celsius to Fahrenheit',
  parameters: z.object({ celsius: z.number() }),
  execute: (_id, { celsius }) => ({ content: [{ type: 'text', text: String((celsius * 9) / 5 + 32) }] }),
});

const cases: EvalCase[] = [
  {
    id: 'paris-f',
    input: 'How warm is Paris, in °F?',
    expected: {
      output: 'It is 68°F in Paris.',
      toolCalls: [
        { name: 'weather', arguments: { city: 'Paris' } },
        { name: 'convert', arguments: { celsius: 20 } },
      ],
    },
  },
  {
    id: 'oslo-c',
    input: 'How warm is Oslo?',
    expected: { output: 'It is 5°C in Oslo.', toolCalls: [{ name: 'weather', arguments: { city: 'Oslo' } }] },
  },
  { id: 'hello', input: 'Hi', expected: { output: 'Hello!', toolCalls: [] } },
];

// The "live" model: scripted answers to the three cases, in order (a real provider in production).
const liveAnswers = () => [
  fauxMessage([fauxToolCall('weather', { city: 'Paris' }, { id: 'w1' })]),
  fauxMessage([fauxToolCall('convert', { celsius: 20 }, { id: 'c1' })]),
  fauxMessage('It is 68°F in Paris.'),
  fauxMessage([fauxToolCall('weather', { city: 'Oslo' }, { id: 'w2' })]),
  fauxMessage('It is 5°C in Oslo.'),
  fauxMessage('Hello!'),
];

const scorers = (): Scorer[] => [exact(), trajectory(), toolChoice(), turns({ max: 3 }), tokens(), cost(), latency()];

const createAgent = ({ provider, middleware }: EvalAgentContext) =>
  new Agent({ provider: provider!, model: 'faux', tools: [weather, convert], middleware: [...middleware] });

let recordings: RecordedCall[];
let firstReplay: string;

beforeAll(async () => {
  const recorder = recordProvider(new FauxProvider({ responses: liveAnswers() }));
  const live = await evaluate({ mode: 'live', recorder, createAgent, dataset: cases, scorers: scorers() });
  expect(live.summary.passRate).toBe(1);
  writeFileSync(join(dir, 'recordings.jsonl'), recorder.toJSONL());
  recordings = await loadRecordings(join(dir, 'recordings.jsonl'));
});

describe('replaying a two-tool agent from its recordings', () => {
  it('records one line per model call, and the replay scores every case as the live run did', async () => {
    expect(recordings.map((r) => `${r.caseId}#${r.call}`)).toEqual([
      'paris-f#0',
      'paris-f#1',
      'paris-f#2',
      'oslo-c#0',
      'oslo-c#1',
      'hello#0',
    ]);
    const report = await evaluate({ mode: 'replay', recordings, createAgent, dataset: cases, scorers: scorers() });
    expect(report).toPass(1);
    const paris = report.cases.find((c) => c.caseId === 'paris-f')!;
    expect(paris.outcome).toBe('completed');
    expect(Object.fromEntries(paris.scores.map((s) => [s.scorer, s.pass]))).toEqual({
      exact: true,
      trajectory: true,
      toolChoice: true,
      turns: true,
      tokens: true,
      cost: true,
      latency: true,
    });
    expect(paris.scores.find((s) => s.scorer === 'turns')!.value).toBe(3);
    // Usage is replayed as recorded: the tokens are the recording's, not re-estimated.
    const recordedTokens = recordings
      .filter((r) => r.caseId === 'paris-f')
      .reduce((n, r) => n + r.message.usage.totalTokens, 0);
    expect(paris.scores.find((s) => s.scorer === 'tokens')!.value).toBe(recordedTokens);
  });

  it('gives the same scores on every run: two replays in one test, byte-equal JSONL (first assertion)', async () => {
    const run = async () =>
      reportToJSONL(await evaluate({ mode: 'replay', recordings, createAgent, dataset: cases, scorers: scorers() }));
    const a = await run();
    const b = await run();
    expect(b).toBe(a);
    firstReplay = a;
    const lines = a.trimEnd().split('\n');
    expect(lines).toHaveLength(3 * (1 + 7) + 1); // a case line and 7 score lines per case, one summary
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ type: 'summary', mode: 'replay', cases: 3, passed: 3 });
  });

  it('gives the same scores in another test, from the recordings file read again (second assertion)', async () => {
    const again = await evaluate({
      mode: 'replay',
      recordings: parseRecordings(readFileSync(join(dir, 'recordings.jsonl'), 'utf8')),
      createAgent,
      dataset: cases,
      scorers: scorers(),
    });
    expect(reportToJSONL(again)).toBe(firstReplay);
    expect(parseReport(firstReplay)).toEqual(again);
  });

  it('measures latency on the virtual clock: a 1000 ms pace per chunk is 1000 ms per chunk, not wall time', async () => {
    const report = await evaluate({
      mode: 'replay',
      recordings,
      replay: { chunkDelayMs: 1000, chunkSize: 1000 },
      createAgent,
      dataset: cases.filter((c) => c.id === 'hello'),
      scorers: [latency()],
    });
    // One text block: text_start, one delta, text_end, then done: three paced chunks after `start`.
    expect(report.cases[0]!.scores[0]!.value).toBe(3000);
  });
});

describe('bad input', () => {
  it('a dataset line that is not JSON and a case missing fields are named; the good lines still load and run', async () => {
    const text = [
      JSON.stringify(cases[2]),
      '{"id": "broken", "input": ',
      '',
      JSON.stringify({ id: 'no-input' }),
      JSON.stringify({ input: 'no id' }),
      JSON.stringify(cases[1]),
    ].join('\n');
    const path = join(dir, 'dataset.jsonl');
    writeFileSync(path, text);
    const dataset = await loadDataset(path);
    expect(dataset.cases.map((c) => c.id)).toEqual(['hello', 'oslo-c']);
    expect(dataset.problems.map((p) => [p.line, p.caseId, p.constructor])).toEqual([
      [2, undefined, EvalDatasetError],
      [4, 'no-input', EvalDatasetError],
      [5, undefined, EvalDatasetError],
    ]);
    expect(dataset.problems[0]!.message).toContain(`${path}:2`);
    expect(dataset.problems[0]!.message).toContain('not valid JSON');
    expect(dataset.problems[1]!.message).toContain('missing field "input"');
    expect(dataset.problems[2]!.message).toContain('missing field "id"');

    const report = await evaluate({ mode: 'replay', recordings, createAgent, dataset, scorers: [exact()] });
    expect(report.cases.map((c) => [c.caseId, c.pass])).toEqual([
      ['hello', true],
      ['oslo-c', true],
    ]);
    expect(report.summary.problems).toBe(3);
    const jsonl = reportToJSONL(report);
    expect(jsonl.split('\n').filter((l) => l.includes('"type":"problem"'))).toHaveLength(3);
    expect(formatReport(report)).toContain(`${path}:4 (case "no-input"): missing field "input"`);
  });

  it('a duplicate id is a problem too, and a dataset given in code is checked the same way', async () => {
    const text = `${JSON.stringify(cases[2])}\n${JSON.stringify(cases[2])}\n`;
    expect(parseDataset(text, 'd.jsonl').problems.map((p) => p.message)).toEqual([
      'd.jsonl:2 (case "hello"): duplicate id',
    ]);
    const report = await evaluate({
      mode: 'replay',
      recordings,
      createAgent,
      dataset: [cases[2], { id: 'x', input: 42 }],
      scorers: [exact()],
    });
    expect(report.cases.map((c) => c.caseId)).toEqual(['hello']);
    expect(report.problems).toMatchObject([{ name: 'EvalDatasetError', code: 'eval_dataset', caseId: 'x' }]);
  });

  it('a scorer that throws, in a hook or when scoring, is a ScorerError on that case only; the rest is reported', async () => {
    const flaky: Scorer = {
      name: 'flaky',
      observe: (evalCase) => ({
        name: 'flaky',
        observeOnly: true,
        afterModelResponse: () => {
          if (evalCase.id === 'paris-f') throw new Error('observer broke');
          return undefined;
        },
        score: () => {
          if (evalCase.id === 'oslo-c') throw new Error('scoring broke');
          return { score: 1, pass: true };
        },
      }),
    };
    const report = await evaluate({
      mode: 'replay',
      recordings,
      createAgent,
      dataset: cases,
      scorers: [exact(), flaky],
    });
    const flakyOf = (id: string) =>
      report.cases.find((c) => c.caseId === id)!.scores.find((s) => s.scorer === 'flaky')!;
    expect(flakyOf('paris-f')).toMatchObject({
      score: 0,
      pass: false,
      error: { name: 'ScorerError', code: 'eval_scorer' },
    });
    expect(flakyOf('paris-f').error!.message).toBe('scorer flaky failed on case "paris-f": observer broke');
    expect(flakyOf('oslo-c').error!.message).toBe('scorer flaky failed on case "oslo-c": scoring broke');
    expect(flakyOf('hello')).toEqual({ caseId: 'hello', scorer: 'flaky', score: 1, pass: true });
    // The run itself was not disturbed: every case completed and the other scorer passed everywhere.
    expect(report.cases.map((c) => c.outcome)).toEqual(['completed', 'completed', 'completed']);
    expect(report.summary.scorers.exact).toEqual({ mean: 1, passRate: 1, errors: 0 });
    expect(report.summary.scorers.flaky).toMatchObject({ errors: 2 });
    expect(report).toPass(1 / 3);
    expect(report).not.toPass(0.5);
  });

  it('a recording that runs out fails its case with a RecordingExhaustedError; the other cases still pass', async () => {
    const cut = recordings.filter((r) => !(r.caseId === 'paris-f' && r.call === 2));
    const report = await evaluate({
      mode: 'replay',
      recordings: cut.filter((r) => r.caseId !== 'hello'),
      createAgent,
      dataset: cases,
      scorers: [exact(), trajectory()],
    });
    const [paris, oslo, hello] = report.cases;
    expect(paris!.error).toEqual({
      name: 'RecordingExhaustedError',
      code: 'eval_recording_exhausted',
      message: 'the recording of case "paris-f" ran out: 2 model calls recorded, the run made 3',
    });
    expect(paris!.pass).toBe(false);
    expect(paris!.outcome).toBe('failed');
    expect(oslo!.pass).toBe(true);
    expect(hello!.error!.message).toBe('no recording for case "hello"');
    expect(report.summary).toMatchObject({ cases: 3, passed: 1 });
  });

  it('a case whose agent cannot be built fails with an EvalCaseError; the others run', async () => {
    const report = await evaluate({
      mode: 'replay',
      recordings,
      createAgent: (ctx) => {
        if (ctx.case.id === 'oslo-c') throw new Error('no agent for you');
        return createAgent(ctx);
      },
      dataset: cases,
      scorers: [exact()],
    });
    expect(report.cases.map((c) => c.pass)).toEqual([true, false, true]);
    expect(report.cases[1]!.error).toMatchObject({
      name: 'EvalCaseError',
      message: 'case "oslo-c" failed: no agent for you',
    });
  });

  it('replay without recordings and two scorers of one name are configuration errors', async () => {
    await expect(evaluate({ mode: 'replay', createAgent, dataset: cases, scorers: [] })).rejects.toThrow(
      'replay needs recordings',
    );
    await expect(
      evaluate({ mode: 'replay', recordings, createAgent, dataset: cases, scorers: [exact(), exact()] }),
    ).rejects.toThrow('two scorers are named exact');
  });
});

describe('scorers', () => {
  it('trajectory matches names in order and arguments as a subset (exact mode) or finds them in order (subset mode)', async () => {
    const variants: EvalCase[] = [
      { ...cases[0]!, id: 'paris-f', expected: { toolCalls: [{ name: 'weather', arguments: { city: 'Paris' } }] } },
    ];
    const report = await evaluate({
      mode: 'replay',
      recordings,
      createAgent,
      dataset: variants,
      scorers: [trajectory(), trajectory({ mode: 'subset' }), toolChoice()],
    });
    expect(report.cases[0]!.scores.map((s) => [s.scorer, s.score])).toEqual([
      ['trajectory', 0],
      ['trajectory:subset', 1],
      ['toolChoice', 0.5],
    ]);
  });

  it('schema parses the answer as JSON and checks it with zod', async () => {
    const calls: RecordedCall[] = [
      { caseId: 'json', call: 0, model: 'faux', messageCount: 1, message: fauxMessage('```json\n{"c": 5}\n```') },
      { caseId: 'text', call: 0, model: 'faux', messageCount: 1, message: fauxMessage('five') },
      { caseId: 'wrong', call: 0, model: 'faux', messageCount: 1, message: fauxMessage('{"c": "5"}') },
    ];
    const report = await evaluate({
      mode: 'replay',
      recordings: calls,
      createAgent,
      dataset: ['json', 'text', 'wrong'].map((id) => ({ id, input: 'q' })),
      scorers: [schema(z.object({ c: z.number() }))],
    });
    expect(report.cases.map((c) => c.scores[0]!.pass)).toEqual([true, false, false]);
    expect(report.cases[1]!.scores[0]!.details).toEqual({ reason: 'the answer is not JSON' });
  });

  it('modelGraded sends the fixed prompt and reads the grade; a grader answering nonsense is a ScorerError', async () => {
    const seen: string[] = [];
    const grader = new FauxProvider({
      responses: [
        (messages) => {
          seen.push(messages[0]!.content as string);
          return fauxMessage('{"score": 0.75, "reason": "close"}');
        },
        fauxMessage('I think it is fine'),
      ],
    });
    const report = await evaluate({
      mode: 'replay',
      recordings,
      createAgent,
      dataset: [cases[1]!, cases[2]!],
      scorers: [modelGraded({ provider: grader, model: { id: 'grader', provider: 'faux' } })],
    });
    expect(seen).toEqual([graderPrompt(cases[1]!, 'It is 5°C in Oslo.')]);
    expect(seen[0]).toBe(
      GRADER_PROMPT.replace('{input}', 'How warm is Oslo?')
        .replace('{expected}', 'It is 5°C in Oslo.')
        .replace('{output}', 'It is 5°C in Oslo.'),
    );
    expect(report.cases[0]!.scores[0]).toMatchObject({ score: 0.75, pass: true, details: { reason: 'close' } });
    expect(report.cases[1]!.scores[0]!.error!.message).toContain("the grader's answer is not a JSON grade");
  });

  it('scorers are observe-only middleware: an observer that steers the run is refused (a HookError on the case)', async () => {
    const steering: Scorer = {
      name: 'steering',
      observe: () =>
        ({
          name: 'steering',
          observeOnly: true,
          afterModelResponse: () => ({ decision: 'stop' }),
          score: () => ({ score: 1, pass: true }),
        }) as unknown as ReturnType<Scorer['observe']>,
    };
    let middleware: readonly Middleware[] = [];
    const report = await evaluate({
      mode: 'replay',
      recordings,
      createAgent: (ctx) => ((middleware = ctx.middleware), createAgent(ctx)),
      dataset: [cases[2]!],
      scorers: [steering],
    });
    expect(middleware.every((m) => m.observeOnly === true)).toBe(true);
    // The HookError ended the run: the observer could not steer it.
    expect(report.cases[0]!.error).toMatchObject({ name: 'HookError', code: 'hook_error' });
    expect(report.cases[0]!.error!.message).toContain('an observeOnly middleware may not decide "stop"');
    expect(report.cases[0]!.pass).toBe(false);
  });
});

describe('comparing two runs', () => {
  it('names the cases that changed and by how much, as a table', async () => {
    const worse = recordings.map((r) =>
      r.caseId === 'oslo-c' && r.call === 1 ? { ...r, message: { ...r.message, content: [fauxText('Cold.')] } } : r,
    );
    const run = (recs: RecordedCall[]) =>
      evaluate({ mode: 'replay', recordings: recs, createAgent, dataset: cases, scorers: [exact(), turns()] });
    const [a, b] = [await run(recordings), await run(worse)];
    const diff = compare(parseReport(reportToJSONL(a)), b);
    expect(diff.changed).toEqual([
      { caseId: 'oslo-c', scorer: 'exact', before: 1, after: 0, delta: -1, status: 'regressed' },
    ]);
    expect(diff.passRate).toEqual({ before: 1, after: 2 / 3, delta: 2 / 3 - 1 });
    const table = formatComparison(diff);
    expect(table).toContain('oslo-c');
    expect(table).toMatch(/oslo-c\s+exact\s+1\s+0\s+-1\s+regressed/);
    expect(formatComparison(compare(a, a))).toContain('no case changed');
  });
});

describe('cancellation', () => {
  it('an aborted signal tears down the running case (its model stream unsubscribed) and rejects; no case after it starts', async () => {
    let started = 0;
    let tornDown = 0;
    const controller = new AbortController();
    // A live model that never answers: the case waits on it until the signal fires.
    const hanging = {
      id: 'hanging',
      stream: () =>
        new Observable<never>(() => {
          started++;
          queueMicrotask(() => controller.abort());
          return () => void tornDown++;
        }),
    };
    const recorder = recordProvider(hanging);
    const run = evaluate({
      mode: 'live',
      recorder,
      signal: controller.signal,
      createAgent,
      dataset: cases,
      scorers: [exact()],
    });
    await expect(run).rejects.toMatchObject({ name: 'RunAbortedError', message: 'the eval was cancelled' });
    expect([started, tornDown]).toEqual([1, 1]);
    expect(recorder.calls).toEqual([]); // a call cut short is not recorded
  });
});
