import { lastValueFrom, toArray, type Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  defineTool,
  fallback,
  OutputError,
  runAgentLoop,
  userMessage,
  type AgentEvent,
  type Message,
  type Model,
  type ModelAttemptEvent,
  type OutputInvalidEvent,
  type Provider,
  type StreamRequest,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { echoTool, expectConsistentTranscript } from '../helpers.js';

const Weather = z.object({ city: z.string(), celsius: z.number() });

/** A model that calls tools and has no native structured output: the run asks for the answer through a final tool. */
const toolModel: Model = { id: 'faux-tools', provider: 'faux', tools: true, structuredOutput: false };
/** A model with native structured output. */
const nativeModel: Model = { id: 'faux-native', provider: 'faux', tools: true, structuredOutput: 'json_schema' };
/** A model without tools nor native output: the schema goes in the prompt. */
const promptModel: Model = { id: 'faux-plain', provider: 'faux', tools: false, structuredOutput: false };

/** A FauxProvider that keeps every request it is sent. */
function recording(faux: FauxProvider): Provider & { requests: StreamRequest[]; contexts: Message[][] } {
  const requests: StreamRequest[] = [];
  const contexts: Message[][] = [];
  return {
    id: faux.id,
    requests,
    contexts,
    stream(model, messages, request = {}) {
      requests.push(request);
      contexts.push([...messages]);
      return faux.stream(model, messages, request);
    },
  };
}

const collect = (events$: Observable<AgentEvent>) => lastValueFrom(events$.pipe(toArray()));
const ofType = <T extends AgentEvent['type']>(events: readonly AgentEvent[], type: T) =>
  events.filter((event): event is Extract<AgentEvent, { type: T }> => event.type === type);

describe('output on a run: tool mode (a model without json_schema)', () => {
  it('runs two tool rounds, then resolves to the typed answer of the final tool', async () => {
    const faux = new FauxProvider({
      responses: [
        fauxMessage([fauxToolCall('echo', { i: 1 }, { id: 'c1' })]),
        fauxMessage([fauxToolCall('echo', { i: 2 }, { id: 'c2' })]),
        fauxMessage([fauxToolCall('final_answer', { city: 'Oslo', celsius: 7 }, { id: 'c3' })]),
      ],
    });
    const provider = recording(faux);
    const agent = new Agent({ provider, model: toolModel, tools: [echoTool] });
    const events: AgentEvent[] = [];
    agent.subscribe((event) => void events.push(event));

    const value = await agent.prompt('Weather in Oslo?', { output: Weather });

    expect(value).toEqual({ city: 'Oslo', celsius: 7 });
    const typed: { city: string; celsius: number } = value; // the overload types the answer
    expect(typed.city).toBe('Oslo');
    expect(faux.callCount).toBe(3);
    // Each request offers the run's tools, then the final tool with the schema, and makes the model call a tool.
    for (const request of provider.requests) {
      expect(request.tools?.map((tool) => tool.name)).toEqual(['echo', 'final_answer']);
      expect(request.tools?.[1]?.inputSchema).toMatchObject({
        type: 'object',
        required: ['city', 'celsius'],
        additionalProperties: false,
      });
      expect(request.toolChoice).toBe('required');
      expect(request.output).toBeUndefined();
    }
    const attempts = ofType(events, 'model_attempt');
    expect(attempts.map((event) => event.output)).toEqual([
      { mode: 'tool', toolName: 'final_answer' },
      { mode: 'tool', toolName: 'final_answer' },
      { mode: 'tool', toolName: 'final_answer' },
    ]);
    const end = ofType(events, 'agent_end')[0]!;
    expect(end.outcome).toBe('completed');
    expect(end.output).toEqual({ city: 'Oslo', celsius: 7 });
    expect(end.outputError).toBeUndefined();
    // The final call got exactly one result, so the transcript stays consistent.
    const messages = agent.state.messages;
    expectConsistentTranscript(messages);
    const last = messages.at(-1)!;
    expect(last).toMatchObject({ role: 'toolResult', toolCallId: 'c3', toolName: 'final_answer', isError: false });
    expect(last.role === 'toolResult' && last.content).toEqual([{ type: 'text', text: 'Answer recorded.' }]);
  });

  it("keeps the run's own tool choice over required", async () => {
    const faux = new FauxProvider({
      responses: [fauxMessage([fauxToolCall('final_answer', { city: 'Oslo', celsius: 7 })])],
    });
    const provider = recording(faux);
    const agent = new Agent({ provider, model: toolModel, toolChoice: 'auto' });
    expect(await agent.prompt('x', { output: Weather })).toEqual({ city: 'Oslo', celsius: 7 });
    expect(provider.requests[0]!.toolChoice).toBe('auto');
  });

  it('runs the other calls of the batch with the final one, and answers each', async () => {
    const faux = new FauxProvider({
      responses: [
        fauxMessage([
          fauxToolCall('echo', { i: 1 }, { id: 'a' }),
          fauxToolCall('final_answer', { city: 'Oslo', celsius: 7 }, { id: 'b' }),
        ]),
      ],
    });
    const agent = new Agent({ provider: faux, model: toolModel, tools: [echoTool] });
    const value = await agent.prompt('go', { output: Weather });
    expect(value).toEqual({ city: 'Oslo', celsius: 7 });
    const results = agent.state.messages.filter((message) => message.role === 'toolResult');
    expect(results.map((message) => [message.toolCallId, message.isError])).toEqual([
      ['a', false],
      ['b', false],
    ]);
    expect(faux.callCount).toBe(1);
  });

  it('answers an invalid final call with an error result listing the issues, emits output_invalid, then takes a valid one', async () => {
    const faux = new FauxProvider({
      responses: [
        fauxMessage([fauxToolCall('final_answer', { city: 'Oslo' }, { id: 'bad' })]),
        fauxMessage([fauxToolCall('final_answer', { city: 'Oslo', celsius: 7 }, { id: 'good' })]),
      ],
    });
    const provider = recording(faux);
    const agent = new Agent({ provider, model: toolModel, tools: [echoTool] });
    const events: AgentEvent[] = [];
    agent.subscribe((event) => void events.push(event));

    expect(await agent.prompt('go', { output: Weather })).toEqual({ city: 'Oslo', celsius: 7 });

    const invalid = ofType(events, 'output_invalid');
    expect(invalid).toHaveLength(1);
    expect(invalid[0]).toMatchObject({ turnIndex: 0, attempt: 1, retrying: true });
    expect(invalid[0]!.issues).toEqual([{ path: ['celsius'], message: expect.stringMatching(/expected number/) }]);
    // The model saw the issues as the final call's error result.
    const retryContext = provider.contexts[1]!;
    const result = retryContext.at(-1)!;
    expect(result).toMatchObject({ role: 'toolResult', toolCallId: 'bad', isError: true });
    expect(result.role === 'toolResult' && result.content[0]).toMatchObject({
      text: expect.stringMatching(/^The answer is not valid:\n- celsius: .*\nCall final_answer again/),
    });
    expectConsistentTranscript(agent.state.messages);
  });
});

describe('output on a run: prompt and native modes', () => {
  it('prompt mode (a model without tools): the schema in the system prompt, output_invalid then a valid fenced answer', async () => {
    const faux = new FauxProvider({
      responses: [fauxMessage('{"city":"Oslo"}'), fauxMessage('```json\n{"city":"Oslo","celsius":7}\n```')],
    });
    const provider = recording(faux);
    const agent = new Agent({ provider, model: promptModel, systemPrompt: 'Weather bot.' });
    const events: AgentEvent[] = [];
    agent.subscribe((event) => void events.push(event));

    expect(await agent.prompt('Oslo?', { output: Weather })).toEqual({ city: 'Oslo', celsius: 7 });

    expect(provider.requests[0]!.systemPrompt).toMatch(
      /^Weather bot\.\n\nAnswer with only a JSON value that matches this JSON Schema:\n\{"type":"object"/,
    );
    expect(provider.requests[0]!.tools).toEqual([]);
    expect(provider.requests[0]!.toolChoice).toBeUndefined();
    expect(ofType(events, 'model_attempt').map((event) => event.output)).toEqual([
      { mode: 'prompt' },
      { mode: 'prompt' },
    ]);
    expect(ofType(events, 'output_invalid').map((event) => [event.attempt, event.retrying])).toEqual([[1, true]]);
    // The retry is a user message with the issues, after the invalid answer.
    const retry = provider.contexts[1]!.at(-1)!;
    expect(retry.role).toBe('user');
    expect(retry.content).toMatch(
      /^Your answer is not valid:\n- celsius: .*\nAnswer again with only the corrected JSON value\.$/,
    );
  });

  it('native mode (a model with json_schema): the request carries StreamRequest.output, strict', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage('{"city":"Oslo","celsius":7}')] });
    const provider = recording(faux);
    const agent = new Agent({ provider, model: nativeModel, tools: [echoTool] });
    const events: AgentEvent[] = [];
    agent.subscribe((event) => void events.push(event));

    const value = await agent.prompt('Oslo?', {
      output: { schema: Weather, name: 'weather', description: 'The weather in a city' },
    });

    expect(value).toEqual({ city: 'Oslo', celsius: 7 });
    const request = provider.requests[0]!;
    expect(request.output).toEqual({
      name: 'weather',
      description: 'The weather in a city',
      strict: true,
      schema: {
        type: 'object',
        properties: { city: { type: 'string' }, celsius: { type: 'number' } },
        required: ['city', 'celsius'],
        additionalProperties: false,
      },
    });
    expect(request.tools?.map((tool) => tool.name)).toEqual(['echo']); // no final tool
    expect(request.toolChoice).toBeUndefined();
    expect(request.systemPrompt).toBe(''); // no instructions
    expect(ofType(events, 'model_attempt')[0]!.output).toEqual({ mode: 'native' });
  });

  it('a run without output sends the request unchanged and emits no output fields', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage('hi')] });
    const provider = recording(faux);
    const agent = new Agent({ provider, model: nativeModel });
    const events: AgentEvent[] = [];
    agent.subscribe((event) => void events.push(event));
    const added = await agent.prompt('hello');
    expect(added.map((message) => message.role)).toEqual(['user', 'assistant']);
    expect(provider.requests[0]!.output).toBeUndefined();
    expect('output' in ofType(events, 'model_attempt')[0]!).toBe(false);
    const end = ofType(events, 'agent_end')[0]!;
    expect('output' in end || 'outputError' in end).toBe(false);
  });
});

describe('output: the retry budget belongs to the run', () => {
  it('after outputRetries invalid answers the run fails; prompt rejects with OutputError', async () => {
    const faux = new FauxProvider({
      responses: [fauxMessage('not json'), fauxMessage('{"city":1}'), fauxMessage('never sent')],
    });
    const agent = new Agent({ provider: faux, model: promptModel });
    const events: AgentEvent[] = [];
    agent.subscribe((event) => void events.push(event));

    const error = (await agent.prompt('Oslo?', { output: Weather, outputRetries: 1 }).catch((e: unknown) => e)) as
      OutputError | undefined;

    expect(error).toBeInstanceOf(OutputError);
    expect(error!.reason).toBe('invalid');
    expect(error!.outcome).toBe('failed');
    expect(error!.attempts).toBe(2);
    expect(error!.issues.map((issue) => issue.path)).toEqual([['city'], ['celsius']]);
    expect(error!.messages.map((message) => message.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(faux.callCount).toBe(2);
    expect(ofType(events, 'output_invalid').map((event) => [event.attempt, event.retrying])).toEqual([
      [1, true],
      [2, false],
    ]);
    const end = ofType(events, 'agent_end')[0]!;
    expect(end.outcome).toBe('failed');
    expect(end.output).toBeUndefined();
    expect(end.outputError).toEqual({ reason: 'invalid', issues: error!.issues, attempts: 2 });
  });

  it('outputRetries 0 takes one answer; the Agent option is the default, the run option wins', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage('nope'), fauxMessage('nope'), fauxMessage('nope')] });
    const agent = new Agent({ provider: faux, model: promptModel, outputRetries: 0 });
    await expect(agent.prompt('a', { output: Weather })).rejects.toMatchObject({ reason: 'invalid', attempts: 1 });
    expect(faux.callCount).toBe(1);
    await expect(agent.prompt('b', { output: Weather, outputRetries: 1 })).rejects.toMatchObject({ attempts: 2 });
    expect(faux.callCount).toBe(3);
  });

  it('a run that ends before an answer (a provider error) rejects with reason missing', async () => {
    const faux = new FauxProvider({
      responses: [fauxMessage('', { stopReason: 'error', errorMessage: 'boom', errorKind: 'unavailable' })],
    });
    const agent = new Agent({ provider: faux, model: promptModel });
    const error = (await agent.prompt('x', { output: Weather }).catch((e: unknown) => e)) as OutputError;
    expect(error).toBeInstanceOf(OutputError);
    expect(error).toMatchObject({ reason: 'missing', outcome: 'failed', attempts: 0, issues: [] });
  });

  it('prompt$ carries the value on agent_end; runAgentLoop takes output and outputRetries too', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage('{"city":"Oslo","celsius":7}')] });
    const agent = new Agent({ provider: faux, model: promptModel });
    const events = await collect(agent.prompt$('x', { output: Weather }));
    expect(ofType(events, 'agent_end')[0]!.output).toEqual({ city: 'Oslo', celsius: 7 });

    const loopFaux = new FauxProvider({ responses: [fauxMessage('{}'), fauxMessage('{}')] });
    const loopEvents = await collect(
      runAgentLoop({
        provider: loopFaux,
        model: promptModel,
        prompts: [userMessage('x')],
        output: Weather,
        outputRetries: 1,
      }),
    );
    const end = ofType(loopEvents, 'agent_end')[0]!;
    expect(end.outcome).toBe('failed');
    expect(end.outputError).toMatchObject({ reason: 'invalid', attempts: 2 });
    expect(loopFaux.callCount).toBe(2);
  });

  it('the Agent option output is validated on every run; prompt() without a run output resolves the messages', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage('{"city":"Oslo","celsius":7}')] });
    const agent = new Agent({ provider: faux, model: promptModel, output: Weather });
    const events: AgentEvent[] = [];
    agent.subscribe((event) => void events.push(event));
    const added = await agent.prompt('x');
    expect(added.map((message) => message.role)).toEqual(['user', 'assistant']);
    expect(ofType(events, 'agent_end')[0]!.output).toEqual({ city: 'Oslo', celsius: 7 });
  });

  it('validates asynchronously (a Standard Schema whose validate returns a Promise)', async () => {
    const standard = {
      '~standard': {
        version: 1 as const,
        vendor: 'test',
        validate: (value: unknown) =>
          Promise.resolve(
            typeof value === 'number' && value > 0
              ? { value }
              : { issues: [{ message: 'must be a positive number', path: [] }] },
          ),
        jsonSchema: {
          input: () => ({ type: 'number' }),
          output: () => ({ type: 'number', exclusiveMinimum: 0 }),
        },
        types: { input: 0, output: 0 },
      },
    };
    const faux = new FauxProvider({ responses: [fauxMessage('-1'), fauxMessage('42')] });
    const agent = new Agent({ provider: faux, model: promptModel });
    const value: number = await agent.prompt('x', { output: standard });
    expect(value).toBe(42);
  });

  it('a non-object schema in tool mode is asked for as { value }', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage([fauxToolCall('final_answer', { value: ['a', 'b'] })])] });
    const provider = recording(faux);
    const agent = new Agent({ provider, model: toolModel });
    expect(await agent.prompt('x', { output: z.array(z.string()) })).toEqual(['a', 'b']);
    expect(provider.requests[0]!.tools?.[0]?.inputSchema).toEqual({
      type: 'object',
      properties: { value: { type: 'array', items: { type: 'string' } } },
      required: ['value'],
      additionalProperties: false,
    });
  });
});

describe('output with fallback', () => {
  it('skips a model refused for a fixed mode it cannot take, with model_attempt saying why', async () => {
    const primary = new FauxProvider({ responses: [fauxMessage('never sent')] });
    const backup = new FauxProvider({ id: 'backup', responses: [fauxMessage('{"city":"Oslo","celsius":7}')] });
    const backupProvider = recording(backup);
    const backupModel: Model = { id: 'backup-native', provider: 'backup', structuredOutput: 'json_schema' };
    const agent = new Agent({
      provider: primary,
      model: toolModel,
      middleware: [fallback([{ provider: backupProvider, model: backupModel }])],
    });
    const events: AgentEvent[] = [];
    agent.subscribe((event) => void events.push(event));

    const value = await agent.prompt('x', { output: { schema: Weather, mode: 'native' } });

    expect(value).toEqual({ city: 'Oslo', celsius: 7 });
    expect(primary.callCount).toBe(0);
    const attempts: ModelAttemptEvent[] = ofType(events, 'model_attempt');
    expect(attempts).toHaveLength(2);
    expect(attempts[0]).toMatchObject({
      model: 'faux-tools',
      incapable: { reason: 'output', message: expect.stringMatching(/no native structured output/) },
    });
    expect(attempts[1]).toMatchObject({ model: 'backup-native', output: { mode: 'native' } });
    expect(backupProvider.requests[0]!.output?.strict).toBe(true);
    expect(ofType(events, 'model_fallback')).toHaveLength(1);
  });

  it('each attempt takes the mode of its own model (tool on one, native on the next)', async () => {
    const primary = new FauxProvider({
      responses: [fauxMessage([], { stopReason: 'error', errorMessage: 'down', errorKind: 'unavailable' })],
    });
    const backup = recording(
      new FauxProvider({ id: 'backup', responses: [fauxMessage('{"city":"Oslo","celsius":7}')] }),
    );
    const agent = new Agent({
      provider: primary,
      model: toolModel,
      middleware: [fallback([{ provider: backup, model: { ...nativeModel, provider: 'backup' } }])],
    });
    const events: AgentEvent[] = [];
    agent.subscribe((event) => void events.push(event));
    expect(await agent.prompt('x', { output: Weather })).toEqual({ city: 'Oslo', celsius: 7 });
    expect(ofType(events, 'model_attempt').map((event) => event.output?.mode)).toEqual(['tool', 'native']);
  });
});

describe('output and cancellation', () => {
  it('cancelled while the final answer streams: rejects OutputError missing/cancelled, transcript consistent', async () => {
    const faux = new FauxProvider({
      chunkSize: 2,
      delayMs: 1,
      responses: [
        fauxMessage([fauxToolCall('echo', { i: 1 }, { id: 'e1' })]),
        fauxMessage([fauxToolCall('final_answer', { city: 'Oslo, a long city name', celsius: 7 }, { id: 'f1' })]),
      ],
    });
    const agent = new Agent({ provider: faux, model: toolModel, tools: [echoTool] });
    let aborted = false;
    agent.subscribe((event) => {
      if (!aborted && event.type === 'message_update' && event.streamEvent.type === 'toolcall_delta') {
        const call = event.message.content.find((block) => block.type === 'toolCall');
        if (call?.name === 'final_answer') {
          aborted = true;
          agent.abort('user left');
        }
      }
    });
    const error = (await agent.prompt('x', { output: Weather }).catch((e: unknown) => e)) as OutputError;
    expect(aborted).toBe(true);
    expect(error).toBeInstanceOf(OutputError);
    expect(error).toMatchObject({ reason: 'missing', outcome: 'cancelled', attempts: 0 });
    const messages = agent.state.messages;
    expectConsistentTranscript(messages);
    expect(messages.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'aborted' });
    // The cut-off final call was never taken as an answer.
    expect(messages.filter((message) => message.role === 'toolResult').map((m) => m.toolCallId)).toEqual(['e1']);
  });
});

describe('output with approvals', () => {
  it('respond() of a suspended run takes the output given to it and resolves to the answer', async () => {
    const risky = defineTool({
      name: 'risky',
      description: 'needs approval',
      parameters: z.object({}),
      execute: () => ({ content: [{ type: 'text', text: 'done' }] }),
    });
    const faux = new FauxProvider({
      responses: [
        fauxMessage([fauxToolCall('risky', {}, { id: 'r1' })]),
        fauxMessage([fauxToolCall('final_answer', { city: 'Oslo', celsius: 7 })]),
      ],
    });
    const agent = new Agent({
      provider: faux,
      model: toolModel,
      tools: [risky],
      // A resumed call comes back through beforeToolCall with `approval` set (issue 31): asked once, not again.
      beforeToolCall: ({ toolCall, approval }) =>
        toolCall.name === 'risky' && approval === undefined ? { kind: 'pause', reason: 'approve?' } : undefined,
    });
    const events: AgentEvent[] = [];
    agent.subscribe((event) => void events.push(event));
    await expect(agent.prompt('x', { output: Weather })).rejects.toMatchObject({
      reason: 'missing',
      outcome: 'suspended',
    });
    const [request] = agent.pending;
    const value = await agent.respond(request!.requestId, { approve: true }, { output: Weather });
    expect(value).toEqual({ city: 'Oslo', celsius: 7 });
    expectConsistentTranscript(agent.state.messages);
    const invalid: OutputInvalidEvent[] = ofType(events, 'output_invalid');
    expect(invalid).toHaveLength(0);
  });
});
