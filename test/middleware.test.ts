// The seed examples of the composition rules, end to end through the Agent.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  computeUsage,
  ConfigurationError,
  defineTool,
  HookError,
  textOf,
  userMessage,
  type AfterToolCallContext,
  type AssistantMessage,
  type BeforeToolCallContext,
  type Message,
  type Middleware,
  type ToolResultMessage,
  type TurnAction,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxText, fauxToolCall, spyHook, type FauxResponse } from 'cubepi/testing';
import { echoTool, expectConsistentTranscript, resultText } from './helpers.js';

const texts = (messages: readonly Message[]) => messages.map((m) => `${m.role}:${textOf(m)}`);

/** A faux provider recording what the model received at each call. */
function recording(...responses: FauxResponse[]) {
  const received: string[][] = [];
  const faux = new FauxProvider({
    responses: responses.map((response): FauxResponse => (messages, model, ctx) => {
      received.push(texts(messages));
      return typeof response === 'function' ? response(messages, model, ctx) : response;
    }),
  });
  return { faux, received };
}

describe('composition through the Agent (the seed examples)', () => {
  it('SlidingWindow + InjectSummary: the second sees the truncated list; the transcript is untouched', async () => {
    class SlidingWindow implements Middleware {
      readonly name = 'SlidingWindow';
      transformContext(messages: Message[]) {
        return messages.slice(-2);
      }
    }
    const seenBySummary: string[][] = [];
    class InjectSummary implements Middleware {
      readonly name = 'InjectSummary';
      transformContext(messages: Message[]) {
        seenBySummary.push(texts(messages));
        return Promise.resolve([userMessage('[summary of earlier turns]'), ...messages]);
      }
    }
    const { faux, received } = recording(fauxMessage('one'), fauxMessage('two'));
    const agent = new Agent({ provider: faux, model: 'faux', middleware: [new SlidingWindow(), new InjectSummary()] });
    await agent.prompt('first question');
    await agent.prompt('second question');
    expect(seenBySummary[1]).toEqual(['assistant:one', 'user:second question']);
    expect(received[1]).toEqual(['user:[summary of earlier turns]', 'assistant:one', 'user:second question']);
    expect(texts(agent.state.messages)).toEqual([
      'user:first question',
      'assistant:one',
      'user:second question',
      'assistant:two',
    ]);
  });

  it("RateLimiter blocks: SafetyFilter's and AuditLogger's beforeToolCall never run, AuditLogger's afterToolCall still does", async () => {
    const safety = spyHook((_ctx: BeforeToolCallContext) => undefined);
    const auditBefore = spyHook((_ctx: BeforeToolCallContext) => undefined);
    const audited: string[] = [];
    let executed = 0;
    const search = defineTool({
      name: 'search',
      description: 'd',
      parameters: z.object({}),
      execute: () => (executed++, 'results'),
    });
    const agent = new Agent({
      provider: new FauxProvider({
        responses: [fauxMessage([fauxToolCall('search', {}, { id: 's1' })]), fauxMessage('ok')],
      }),
      model: 'faux',
      tools: [search],
      middleware: [
        {
          name: 'RateLimiter',
          beforeToolCall: async () => ({ block: true, reason: 'Rate limit: try again in a minute' }),
        },
        { name: 'SafetyFilter', beforeToolCall: safety },
        {
          name: 'AuditLogger',
          beforeToolCall: auditBefore,
          afterToolCall: (ctx: AfterToolCallContext) =>
            void audited.push(`${ctx.toolCall.id} error=${ctx.isError} ${resultText(ctx.result)}`),
        },
      ],
    });
    await agent.prompt('search something');
    expect(safety.calls).toHaveLength(0);
    expect(auditBefore.calls).toHaveLength(0);
    expect(audited).toEqual(['s1 error=true Rate limit: try again in a minute']);
    expect(executed).toBe(0);
    const result = agent.state.messages.find((m): m is ToolResultMessage => m.role === 'toolResult')!;
    expect([result.isError, resultText(result)]).toEqual([true, 'Rate limit: try again in a minute']);
  });

  it('a details-adder and a redactor: the merged result has both the rich details and the redacted content', async () => {
    const lookup = defineTool({
      name: 'lookup',
      description: 'd',
      parameters: z.object({}),
      execute: () => ({ content: [{ type: 'text', text: 'user: ann, ssn: 123-45-6789' }], details: { source: 'crm' } }),
    });
    const { faux, received } = recording(fauxMessage([fauxToolCall('lookup', {}, { id: 'l' })]), fauxMessage('done'));
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      tools: [lookup],
      middleware: [
        {
          name: 'DetailsAdder',
          afterToolCall: (ctx: AfterToolCallContext) => ({
            details: { ...(ctx.result.details as object), rows: 1, tookMs: 3 },
          }),
        },
        {
          name: 'Redactor',
          afterToolCall: (ctx: AfterToolCallContext) => ({
            content: [{ type: 'text', text: resultText(ctx.result).replace(/\d{3}-\d{2}-\d{4}/, '[ssn]') }],
          }),
        },
      ],
    });
    await agent.prompt('who is ann?');
    const result = agent.state.messages.find((m): m is ToolResultMessage => m.role === 'toolResult')!;
    expect(resultText(result)).toBe('user: ann, ssn: [ssn]');
    expect(result.details).toEqual({ source: 'crm', rows: 1, tookMs: 3 });
    expect(received[1]).toContain('toolResult:user: ann, ssn: [ssn]'); // what the model saw is redacted
  });

  describe('MaxTurns + BudgetCap + a FINAL ANSWER sentinel', () => {
    const middleware = async (responses: FauxResponse[], usd = 1) => {
      const { MaxTurns, BudgetCap, StopOnText } = await import('cubepi');
      const faux = new FauxProvider({ responses });
      const agent = new Agent({
        provider: faux,
        model: 'faux',
        tools: [echoTool],
        middleware: [new MaxTurns(3), new BudgetCap({ usd }), new StopOnText('FINAL ANSWER')],
      });
      return { agent, faux };
    };
    const call = (i: number) => fauxMessage([fauxToolCall('echo', { i })]);

    it('the sentinel stops the run after the turn that says it', async () => {
      const { agent, faux } = await middleware([call(1), fauxMessage('FINAL ANSWER: 42'), fauxMessage('never')], 1e9);
      agent.followUp('stays queued');
      await agent.prompt('go');
      expect(faux.callCount).toBe(2);
    });

    it('MaxTurns stops a run that keeps calling tools', async () => {
      const { agent, faux } = await middleware([call(1), call(2), call(3), call(4)], 1e9);
      const added = await agent.prompt('go');
      expect(faux.callCount).toBe(3);
      expectConsistentTranscript(added);
    });

    it('BudgetCap stops once the computed cost reaches the cap', async () => {
      // Each call reports 5,000 tokens: $0.50 at $100 per million tokens; the second call reaches $1.
      const usage = computeUsage(
        { input: 2_500, output: 2_500 },
        { cost: { input: 100, output: 100, cacheRead: 0, cacheWrite: 0 } },
      );
      const priced = (i: number) => fauxMessage([fauxToolCall('echo', { i })], { usage });
      const { agent, faux } = await middleware([priced(1), priced(2), priced(3)], 1);
      const added = await agent.prompt('go');
      const spent = added
        .filter((m): m is AssistantMessage => m.role === 'assistant')
        .reduce((sum, m) => sum + m.usage.cost.total, 0);
      expect(spent).toBeCloseTo(1);
      expect(faux.callCount).toBe(2);
    });
  });

  describe('afterModelResponse: the last returned decision wins', () => {
    const validator: Middleware = {
      name: 'StructuredOutputValidator',
      afterModelResponse: (response): TurnAction | undefined =>
        textOf(response).startsWith('{')
          ? undefined
          : { decision: 'loop_to_model', injectMessages: [userMessage('Answer in JSON.')] },
    };
    const logger: Middleware = { name: 'EventLogger', afterModelResponse: () => ({ decision: 'natural' }) };

    it("validator → logger: the logger's natural wins, the model is not called again", async () => {
      const faux = new FauxProvider({ responses: [fauxMessage('plain text'), fauxMessage('{"ok":true}')] });
      const agent = new Agent({ provider: faux, model: 'faux', middleware: [validator, logger] });
      const added = await agent.prompt('go');
      expect(faux.callCount).toBe(1);
      expect(texts(added)).toEqual(['user:go', 'assistant:plain text', 'user:Answer in JSON.']);
    });

    it("logger → validator: the validator's loop_to_model wins", async () => {
      const faux = new FauxProvider({ responses: [fauxMessage('plain text'), fauxMessage('{"ok":true}')] });
      const agent = new Agent({ provider: faux, model: 'faux', middleware: [logger, validator] });
      const added = await agent.prompt('go');
      expect(faux.callCount).toBe(2);
      expect(texts(added)).toEqual([
        'user:go',
        'assistant:plain text',
        'user:Answer in JSON.',
        'assistant:{"ok":true}',
      ]);
    });

    it('a replaced response is what later middlewares see and what is stored', async () => {
      const seen: string[] = [];
      const agent = new Agent({
        provider: new FauxProvider({ responses: [fauxMessage('darn')] }),
        model: 'faux',
        middleware: [
          { name: 'Redactor', afterModelResponse: (r) => ({ response: { ...r, content: [fauxText('****')] } }) },
          { name: 'Logger', afterModelResponse: (r) => void seen.push(textOf(r)) },
        ],
      });
      await agent.prompt('go');
      expect(seen).toEqual(['****']);
      expect(textOf(agent.state.messages.at(-1)!)).toBe('****');
    });
  });

  it('an explicit constructor hook replaces the middleware version of that hook', async () => {
    const middlewareGate = spyHook(() => ({ block: true, reason: 'middleware says no' }));
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage([fauxToolCall('echo', { i: 1 })]), fauxMessage('ok')] }),
      model: 'faux',
      tools: [echoTool],
      middleware: [{ name: 'Logging', beforeToolCall: middlewareGate, afterToolCall: () => ({ details: 'logged' }) }],
      beforeToolCall: () => undefined, // allow everything
    });
    await agent.prompt('go');
    expect(middlewareGate.calls).toHaveLength(0);
    const result = agent.state.messages.find((m): m is ToolResultMessage => m.role === 'toolResult')!;
    expect([result.isError, resultText(result), result.details]).toEqual([false, 'ok 1', 'logged']); // its other hooks still run
    expect(agent.describeMiddleware().beforeToolCall).toMatchObject({
      runs: ['agent options'],
      overridden: ['Logging'],
    });
  });

  it('convertToLlm: only the last middleware that implements it runs', async () => {
    const first = spyHook((m: Message[]) => m);
    const { faux, received } = recording(fauxMessage('ok'));
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      middleware: [
        { name: 'First', convertToLlm: first },
        {
          name: 'Last',
          convertToLlm: (m: Message[]) => m.map((x) => (x.role === 'user' ? userMessage(`<${textOf(x)}>`) : x)),
        },
      ],
    });
    await agent.prompt('hi');
    expect(first.calls).toHaveLength(0);
    expect(received[0]).toEqual(['user:<hi>']);
  });

  it('a failing middleware hook ends the run with a HookError naming the middleware', async () => {
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('x')] }),
      model: 'faux',
      middleware: [
        { name: 'Fine', transformContext: (m: Message[]) => m },
        { name: 'Broken', transformSystemPrompt: () => Promise.reject(new Error('vault sealed')) },
      ],
    });
    const error = await agent.prompt('go').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HookError);
    expect(error).toMatchObject({ middleware: 'Broken', hook: 'transformSystemPrompt' });
    expect(agent.state.messages.at(-1)).toMatchObject({ stopReason: 'error' });
  });

  it('describeMiddleware lists, per hook, who runs in which order, and only the hooks present are wired', () => {
    class AuditLogger implements Middleware {
      beforeToolCall() {
        return undefined;
      }
      afterToolCall() {
        return undefined;
      }
    }
    const agent = new Agent({
      provider: new FauxProvider(),
      model: 'faux',
      middleware: [
        { name: 'RateLimiter', beforeToolCall: () => undefined },
        { name: 'ToLlmA', convertToLlm: (m: Message[]) => m },
        new AuditLogger(),
        { name: 'ToLlmB', convertToLlm: (m: Message[]) => m },
        { transformContext: (m: Message[]) => m },
      ],
    });
    const description = agent.describeMiddleware();
    expect(description.beforeToolCall.runs).toEqual(['RateLimiter', 'AuditLogger']);
    expect(description.afterToolCall.runs).toEqual(['AuditLogger']);
    expect(description.convertToLlm).toMatchObject({ runs: ['ToLlmB'], overridden: ['ToLlmA'] });
    expect(description.transformContext.runs).toEqual(['middleware[4]']);
    expect(description.shouldStopAfterTurn.runs).toEqual([]);
    expect(description.beforeToolCall.rule).toMatch(/first decision wins/);
  });

  it('rejects duplicate middleware names at construction, with a clear error', () => {
    const make = () =>
      new Agent({ provider: new FauxProvider(), model: 'faux', middleware: [{ name: 'Audit' }, { name: 'Audit' }] });
    expect(make).toThrow(ConfigurationError);
    expect(make).toThrow('two middlewares are named "Audit"');
  });

  it('rejects a hook that is not a function at construction', () => {
    expect(
      () =>
        new Agent({
          provider: new FauxProvider(),
          model: 'faux',
          middleware: [{ name: 'Bad', beforeToolCall: 42 as never }],
        }),
    ).toThrow('middleware "Bad": beforeToolCall must be a function');
  });
});
