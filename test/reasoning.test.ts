// The one reasoning knob: resolveReasoning over every built-in model family (each row's result valid for its own
// thinking facts), explicit expectations for representative models, and the resolved setting on the request, on
// model_attempt and on the chat span through a fallback.
import { InMemorySpanExporter, BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import {
  Agent,
  ConfigurationError,
  fallback,
  findModel,
  MODELS,
  REASONING_BUDGETS,
  resolveReasoning,
  type AgentEvent,
  type Model,
  type Provider,
  type ReasoningEffort,
  type ReasoningSetting,
  type ResolvedReasoning,
} from 'cubepi';
import { FauxProvider, fauxMessage } from 'cubepi/testing';
import { traceAgent } from 'cubepi/tracing';

const LEVELS = ['minimal', 'low', 'medium', 'high', 'max'] as const;
const SETTINGS: readonly ReasoningSetting[] = [
  'off',
  ...LEVELS,
  { budgetTokens: 0 },
  { budgetTokens: 1 },
  { budgetTokens: 2_000 },
  { budgetTokens: 12_000 },
  { budgetTokens: 1_000_000 },
];
const RANK: Record<ReasoningEffort, number> = { minimal: 0, low: 1, medium: 2, high: 3, xhigh: 4, max: 5 };

/** A row's family: the vendor's model line without region prefixes, versions and sizes (`claude opus`, `gpt-5`). */
function familyOf(model: Model): string {
  const id = model.id.replace(/^(global|us|eu|apac|au|jp|in|ca|us-gov)\./, '').replace(/^[a-z]+\.(?=[a-z])/, '');
  const claude = /^claude-(?:\d-(?:\d-)?)?(opus|sonnet|haiku|fable|mythos)/.exec(id);
  if (claude) return `${model.provider} claude ${claude[1]}`;
  const gpt = /^gpt-(oss|\d+)/.exec(id);
  if (gpt) return `${model.provider} gpt-${gpt[1]}`;
  if (/^o\d/.test(id)) return `${model.provider} o-series`;
  const gemini = /^gemini-(\d|flash|pro)/.exec(id);
  if (gemini) return `${model.provider} gemini ${gemini[1]}`;
  return `${model.provider} ${/^[a-z]+/.exec(id)![0]}`;
}

const FAMILIES = new Map<string, Model[]>();
for (const model of MODELS) {
  const family = familyOf(model);
  FAMILIES.set(family, [...(FAMILIES.get(family) ?? []), model]);
}

/** Asserts `resolved` is what `model` can take for `setting`, by the model's own facts. */
function expectValid(model: Model, setting: ReasoningSetting, resolved: ResolvedReasoning | undefined): void {
  const at = `${model.id} ${JSON.stringify(setting)}`;
  if (model.reasoning !== true) {
    expect(resolved, at).toBeUndefined();
    return;
  }
  expect(resolved, at).toBeDefined();
  const r = resolved!;
  expect(r.requested, at).toBe(setting);
  const thinking = model.thinking;
  const off = setting === 'off' || (typeof setting === 'object' && setting.budgetTokens === 0);
  if (thinking === undefined) {
    // Control unknown: the level passed on by name with its default budget.
    if (off) expect(r, at).toEqual({ requested: setting, off: true });
    else if (typeof setting === 'string') {
      expect(r, at).toEqual({ requested: setting, effort: setting, budgetTokens: REASONING_BUDGETS[setting] });
    } else expect(r, at).toEqual({ requested: setting, budgetTokens: setting.budgetTokens });
    return;
  }
  if (r.off === true) {
    expect(thinking.canDisable, at).toBe(true);
    expect(off, at).toBe(true);
    expect(r.effort ?? r.budgetTokens, at).toBeUndefined();
    return;
  }
  if (off) {
    // A model that always thinks: its lowest level, marked clamped.
    expect(thinking.canDisable, at).toBe(false);
    expect(r.clamped, at).toBe(true);
    if (thinking.efforts) expect(r.effort, at).toBe(thinking.efforts[0]);
    if (thinking.budget) expect(r.budgetTokens, at).toBe(thinking.budget.min);
    return;
  }
  if (r.effort !== undefined) expect(thinking.efforts, at).toContain(r.effort);
  if (r.budgetTokens !== undefined) {
    expect(thinking.budget, at).toBeDefined();
    expect(r.budgetTokens, at).toBeGreaterThanOrEqual(thinking.budget!.min);
    expect(r.budgetTokens, at).toBeLessThanOrEqual(thinking.budget!.max);
  }
  if (typeof setting === 'string') {
    if (thinking.efforts) expect(r.effort, at).toBeDefined();
    if (thinking.budget) expect(r.budgetTokens, at).toBeDefined();
    const exactEffort = thinking.efforts === undefined || r.effort === setting;
    const exactBudget =
      thinking.budget === undefined ||
      r.budgetTokens === (setting === 'max' ? thinking.budget.max : REASONING_BUDGETS[setting]);
    expect(r.clamped === true, at).toBe(!(exactEffort && exactBudget && (thinking.efforts ?? thinking.budget)));
  } else if (thinking.budget) {
    expect(r.effort, at).toBeUndefined();
    expect(r.clamped === true, at).toBe(r.budgetTokens !== setting.budgetTokens);
  } else if (thinking.efforts) {
    expect(r.effort, at).toBeDefined();
    expect(r.clamped, at).toBe(true);
  }
}

describe('resolveReasoning over every built-in model family', () => {
  it('sorts every row of the table into a family', () => {
    expect([...FAMILIES.values()].flat()).toHaveLength(MODELS.length);
    for (const family of ['anthropic claude opus', 'openai gpt-5', 'openai o-series', 'google gemini 2']) {
      expect(FAMILIES.has(family), family).toBe(true);
    }
  });

  it.each([...FAMILIES.keys()])('%s: each row gets a setting its own thinking facts allow', (family) => {
    for (const model of FAMILIES.get(family)!) {
      for (const setting of SETTINGS) expectValid(model, setting, resolveReasoning(model, setting));
      // Higher levels never think less: efforts and budgets are non-decreasing from minimal to max.
      const resolved = LEVELS.map((level) => resolveReasoning(model, level));
      for (let i = 1; i < resolved.length; i++) {
        const [a, b] = [resolved[i - 1], resolved[i]];
        if (a?.effort !== undefined && b?.effort !== undefined) {
          expect(RANK[b.effort], model.id).toBeGreaterThanOrEqual(RANK[a.effort]);
        }
        if (a?.budgetTokens !== undefined && b?.budgetTokens !== undefined) {
          expect(b.budgetTokens, model.id).toBeGreaterThanOrEqual(a.budgetTokens);
        }
      }
    }
  });
});

describe('resolveReasoning on representative models', () => {
  const on = (id: string, setting: ReasoningSetting) => resolveReasoning({ id, provider: 'any' }, setting);

  it('Claude: budget models get the level budgets clamped into their range; effort models their effort', () => {
    // claude-sonnet-4-5: budget 1024..63999, can be turned off.
    expect(on('claude-sonnet-4-5', 'minimal')).toEqual({ requested: 'minimal', budgetTokens: 1_024 });
    expect(on('claude-sonnet-4-5', 'medium')).toEqual({ requested: 'medium', budgetTokens: 8_192 });
    expect(on('claude-sonnet-4-5', 'max')).toEqual({ requested: 'max', budgetTokens: 63_999 });
    expect(on('claude-sonnet-4-5', 'off')).toEqual({ requested: 'off', off: true });
    expect(on('claude-sonnet-4-5', { budgetTokens: 500 })).toEqual({
      requested: { budgetTokens: 500 },
      budgetTokens: 1_024,
      clamped: true,
    });
    expect(on('claude-haiku-4-5', { budgetTokens: 100_000 })).toMatchObject({ budgetTokens: 63_999, clamped: true });
    // claude-opus-4-1: max 31999, so `max` is 31999 and `high` (16384) fits.
    expect(on('claude-opus-4-1', 'high')).toEqual({ requested: 'high', budgetTokens: 16_384 });
    expect(on('claude-opus-4-1', 'max')).toEqual({ requested: 'max', budgetTokens: 31_999 });
    // claude-opus-4-5 takes both an effort and a budget: both are sent.
    expect(on('claude-opus-4-5', 'high')).toEqual({ requested: 'high', effort: 'high', budgetTokens: 16_384 });
    expect(on('claude-opus-4-5', 'max')).toEqual({
      requested: 'max',
      effort: 'xhigh',
      budgetTokens: 63_999,
      clamped: true,
    });
    // claude-opus-4-8: low, medium, high, xhigh, max.
    expect(on('claude-opus-4-8', 'max')).toEqual({ requested: 'max', effort: 'max' });
    expect(on('claude-opus-4-8', 'minimal')).toEqual({ requested: 'minimal', effort: 'low', clamped: true });
    // claude-sonnet-4-6: low, medium, high — max is its highest.
    expect(on('claude-sonnet-4-6', 'max')).toEqual({ requested: 'max', effort: 'high', clamped: true });
    expect(on('claude-sonnet-4-6', { budgetTokens: 9_000 })).toEqual({
      requested: { budgetTokens: 9_000 },
      effort: 'medium',
      clamped: true,
    });
    // A Claude that does not reason: nothing is sent, the attempt goes without thinking.
    expect(on('claude-3-haiku-20240307', 'high')).toBeUndefined();
    expect(on('claude-3-haiku-20240307', 'off')).toBeUndefined();
  });

  it('OpenAI: gpt-5.x and o-series map onto their effort lists; the o-series cannot turn thinking off', () => {
    expect(on('gpt-5', 'minimal')).toEqual({ requested: 'minimal', effort: 'minimal' });
    expect(on('gpt-5', 'max')).toEqual({ requested: 'max', effort: 'high', clamped: true });
    expect(on('gpt-5.2', 'max')).toEqual({ requested: 'max', effort: 'xhigh', clamped: true });
    expect(on('gpt-5.2', 'minimal')).toEqual({ requested: 'minimal', effort: 'low', clamped: true });
    expect(on('gpt-5.6', 'max')).toEqual({ requested: 'max', effort: 'max' });
    // gpt-5.1-codex-mini takes medium and high only: low is clamped up to the nearest, medium.
    expect(on('gpt-5.1-codex-mini', 'low')).toEqual({ requested: 'low', effort: 'medium', clamped: true });
    expect(on('o3', 'off')).toEqual({ requested: 'off', effort: 'minimal', clamped: true });
    expect(on('o4-mini', 'high')).toEqual({ requested: 'high', effort: 'high' });
    expect(on('o4-mini', { budgetTokens: 30_000 })).toEqual({
      requested: { budgetTokens: 30_000 },
      effort: 'xhigh',
      clamped: true,
    });
    expect(on('gpt-4.1', 'high')).toBeUndefined();
  });

  it('Gemini: 2.5 by budget (Pro cannot turn off, Flash can), 3 by levels', () => {
    expect(on('gemini-2.5-pro', 'off')).toEqual({ requested: 'off', budgetTokens: 128, clamped: true });
    expect(on('gemini-2.5-pro', 'max')).toEqual({ requested: 'max', budgetTokens: 32_768 });
    expect(on('gemini-2.5-flash', 'off')).toEqual({ requested: 'off', off: true });
    expect(on('gemini-2.5-flash', 'high')).toEqual({ requested: 'high', budgetTokens: 16_384 });
    expect(on('gemini-2.5-flash', 'max')).toEqual({ requested: 'max', budgetTokens: 24_576 });
    expect(on('gemini-2.5-flash-lite', 'off')).toEqual({ requested: 'off', budgetTokens: 512, clamped: true });
    // Gemini 3 Pro takes low or high: medium is a tie, and a tie goes to the higher level.
    expect(on('gemini-3-pro-preview', 'medium')).toEqual({ requested: 'medium', effort: 'high', clamped: true });
    expect(on('gemini-3-pro-preview', 'off')).toEqual({ requested: 'off', effort: 'low', clamped: true });
    expect(on('gemini-3-flash-preview', 'minimal')).toEqual({ requested: 'minimal', effort: 'minimal' });
    expect(on('gemini-2.0-flash', 'medium')).toBeUndefined();
  });

  it('Bedrock: Nova, DeepSeek and other reasoning rows without a known control get the level passed on', () => {
    // Nova 2 Lite, DeepSeek V3.2 and Grok reason, but the table does not say how their thinking is controlled.
    expect(on('global.amazon.nova-2-lite-v1:0', 'high')).toEqual({
      requested: 'high',
      effort: 'high',
      budgetTokens: 16_384,
    });
    expect(on('deepseek.v3.2', 'off')).toEqual({ requested: 'off', off: true });
    expect(on('us.deepseek.r1-v1:0', { budgetTokens: 5_000 })).toEqual({
      requested: { budgetTokens: 5_000 },
      budgetTokens: 5_000,
    });
    // Nova Pro does not reason; a Bedrock Claude resolves like the Anthropic one of the same line.
    expect(on('us.amazon.nova-pro-v1:0', 'high')).toBeUndefined();
    expect(on('global.anthropic.claude-sonnet-4-6', 'max')).toEqual({ requested: 'max', budgetTokens: 127_999 });
    expect(on('eu.anthropic.claude-opus-4-7', 'max')).toEqual({ requested: 'max', effort: 'max' });
  });

  it('an unknown model: the level as its effort with the default budget; a model’s own facts win over the table', () => {
    expect(on('my-local-model', 'low')).toEqual({ requested: 'low', effort: 'low', budgetTokens: 4_096 });
    expect(on('my-local-model', 'off')).toEqual({ requested: 'off', off: true });
    expect(resolveReasoning({ id: 'my-local-model', provider: 'x', reasoning: false }, 'high')).toBeUndefined();
    const own: Model = {
      ...findModel('gpt-5')!,
      thinking: { efforts: ['low', 'high'], canDisable: false },
    };
    expect(resolveReasoning(own, 'off')).toEqual({ requested: 'off', effort: 'low', clamped: true });
    expect(resolveReasoning({ id: 'gpt-5', provider: 'x' }, undefined)).toBeUndefined();
  });
});

describe('the reasoning setting on a run', () => {
  /** A FauxProvider that notes each request's `reasoning`. */
  function noting(faux: FauxProvider): { provider: Provider; seen: (ResolvedReasoning | undefined)[] } {
    const seen: (ResolvedReasoning | undefined)[] = [];
    return {
      seen,
      provider: {
        id: faux.id,
        stream: (model, messages, request) => {
          seen.push(request?.reasoning);
          return faux.stream(model, messages, request);
        },
      },
    };
  }

  it('is resolved again on a fallback: the request, model_attempt and the chat span carry what each model took', async () => {
    const exporter = new InMemorySpanExporter();
    const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('t');
    const primary = noting(
      new FauxProvider({
        responses: [fauxMessage([], { stopReason: 'error', errorKind: 'rate_limited', errorMessage: 'slow down' })],
      }),
    );
    const backup = noting(new FauxProvider({ id: 'backup', responses: [fauxMessage('thought about it')] }));
    const agent = new Agent({
      provider: primary.provider,
      model: { id: 'gemini-3-pro-preview', provider: 'faux' },
      reasoning: 'medium',
      middleware: [fallback([{ provider: backup.provider, model: { id: 'claude-sonnet-4-5', provider: 'backup' } }])],
    });
    traceAgent(agent, { tracer });
    const events: AgentEvent[] = [];
    agent.subscribe((event) => {
      events.push(event);
    });
    await agent.prompt('think');

    const gemini = { requested: 'medium', effort: 'high', clamped: true };
    const claude = { requested: 'medium', budgetTokens: 8_192 };
    expect(primary.seen).toEqual([gemini]);
    expect(backup.seen).toEqual([claude]);
    const attempts = events.flatMap((e) => (e.type === 'model_attempt' ? [[e.model, e.reasoning]] : []));
    expect(attempts).toEqual([
      ['gemini-3-pro-preview', gemini],
      ['claude-sonnet-4-5', claude],
    ]);
    const spans = exporter.getFinishedSpans();
    const span = (name: string) => spans.find((s) => s.name === name)!.attributes;
    expect(span('chat gemini-3-pro-preview')).toMatchObject({
      'cubepi.reasoning.requested': 'medium',
      'cubepi.reasoning.effort': 'high',
      'cubepi.reasoning.clamped': true,
    });
    expect(span('chat gemini-3-pro-preview')['cubepi.reasoning.budget_tokens']).toBeUndefined();
    expect(span('chat claude-sonnet-4-5')).toMatchObject({
      'cubepi.reasoning.requested': 'medium',
      'cubepi.reasoning.budget_tokens': 8_192,
    });
    expect(span('chat claude-sonnet-4-5')['cubepi.reasoning.clamped']).toBeUndefined();
  });

  it('a run option overrides the agent’s; no setting sends nothing and marks no span', async () => {
    const exporter = new InMemorySpanExporter();
    const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('t');
    const faux = noting(new FauxProvider({ responses: [fauxMessage('a'), fauxMessage('b')] }));
    const agent = new Agent({ provider: faux.provider, model: { id: 'gemini-2.5-flash', provider: 'faux' } });
    traceAgent(agent, { tracer });
    await agent.prompt('plain');
    await agent.prompt('no thinking', { reasoning: 'off' });
    expect(faux.seen).toEqual([undefined, { requested: 'off', off: true }]);
    const chats = exporter.getFinishedSpans().filter((s) => s.name.startsWith('chat '));
    expect(chats.map((s) => s.attributes['cubepi.reasoning.requested'])).toEqual([undefined, 'off']);
    expect(chats[1]!.attributes['cubepi.reasoning.off']).toBe(true);
  });

  it('a setting that is not a reasoning setting is a ConfigurationError naming it', () => {
    const provider = new FauxProvider();
    expect(() => new Agent({ provider, model: 'faux', reasoning: 'huge' as never })).toThrow(ConfigurationError);
    expect(() => new Agent({ provider, model: 'faux', reasoning: 'huge' as never })).toThrow(/`reasoning` must be/);
    expect(() => new Agent({ provider, model: 'faux', reasoning: { budgetTokens: -1 } })).toThrow(
      /`reasoning` `budgetTokens` must be a non-negative integer/,
    );
  });
});
