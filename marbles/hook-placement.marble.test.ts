// Rule: hook placement — each hook's implementers run sorted by hookPhase (run … final), then hookOrder, then list
// order (stable); undeclared means phase 'context', order 0, so a list that declares nothing runs in list order.
import { describe, expect, it } from 'vitest';
import { composeMiddleware, HOOK_PHASES, type BeforeToolCallContext, type HookPhase, type Middleware } from 'cubepi';
import { spyHook } from 'cubepi/testing';
import { assistant, hookContext, observed, testScheduler, toolCall, user } from './helpers.js';

const ctx = hookContext();
const input = [user('hello')];

/** A middleware whose transformSystemPrompt answers `hook()` (a cold Observable), placed as declared. */
function appender(
  name: string,
  hook: () => unknown,
  placement: { hookPhase?: HookPhase; hookOrder?: number } = {},
): Middleware {
  return { name, ...placement, transformSystemPrompt: hook as NonNullable<Middleware['transformSystemPrompt']> };
}

describe('hook placement: by phase, then order, then list', () => {
  it('the phases are the seed’s, earliest first', () => {
    expect(HOOK_PHASES).toEqual(['run', 'context', 'model', 'tool', 'state', 'final']);
  });

  it('runs by phase, then by hookOrder, then in list order; each hook subscribed after the one placed before it', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      // Listed in reverse of where they run.
      const fin = cold('       -f|', { f: 'p>run>ctx>tool-1>tool5>final' });
      const tool5 = cold('    -e|', { e: 'p>run>ctx>tool-1>tool5' });
      const toolMinus = cold('-d|', { d: 'p>run>ctx>tool-1' });
      const plain = cold('  -c|', { c: 'p>run>ctx' });
      const run = cold('  -b|', { b: 'p>run' });
      const composed = composeMiddleware([
        appender('final', () => fin, { hookPhase: 'final' }),
        appender('tool5', () => tool5, { hookPhase: 'tool', hookOrder: 5 }),
        appender('tool-1', () => toolMinus, { hookPhase: 'tool', hookOrder: -1 }),
        appender('plain', () => plain),
        appender('run', () => run, { hookPhase: 'run' }),
      ]);
      expect(composed.description.transformSystemPrompt.runs).toEqual(['run', 'plain', 'tool-1', 'tool5', 'final']);
      expectObservable(observed(composed.hooks.transformSystemPrompt!('p', ctx))).toBe('----------(r|)', {
        r: 'p>run>ctx>tool-1>tool5>final',
      });
      expectSubscriptions(run.subscriptions).toBe('      ^-!');
      expectSubscriptions(plain.subscriptions).toBe('    --^-!');
      expectSubscriptions(toolMinus.subscriptions).toBe('----^-!');
      expectSubscriptions(tool5.subscriptions).toBe('    ------^-!');
      expectSubscriptions(fin.subscriptions).toBe('      --------^-!');
    });
  });

  it('ties keep list order: same phase and order (declared or not) run as listed', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const a = cold('-a|', { a: 'bca' });
      const b = cold('  -b|', { b: 'b' });
      const c = cold('    -c|', { c: 'bc' });
      const composed = composeMiddleware([
        appender('a', () => a, { hookPhase: 'model', hookOrder: 2 }),
        appender('b', () => b, { hookPhase: 'model' }),
        appender('c', () => c, { hookPhase: 'model', hookOrder: 0 }),
      ]);
      // b and c both sit at (model, 0): list order; a at order 2 goes after them.
      expect(composed.description.transformSystemPrompt.runs).toEqual(['b', 'c', 'a']);
      expectObservable(observed(composed.hooks.transformSystemPrompt!('', ctx))).toBe('------(r|)', { r: 'bca' });
      expectSubscriptions(b.subscriptions).toBe('^-!');
      expectSubscriptions(c.subscriptions).toBe('--^-!');
      expectSubscriptions(a.subscriptions).toBe('----^-!');
    });
  });

  it('a list that declares nothing runs in list order, as before placement existed', () => {
    const names = ['z', 'y', 'x', 'w'];
    const composed = composeMiddleware(names.map((name) => ({ name, transformSystemPrompt: (p: string) => p + name })));
    expect(composed.description.transformSystemPrompt.runs).toEqual(names);
    expect(composed.hooks.transformSystemPrompt!('', ctx)).toBe('zyxw');
    expect(composed.description.transformSystemPrompt.links).toEqual(
      names.map((name) => ({ name, phase: 'context', order: 0 })),
    );
  });

  it('convertToLlm: the last after sorting wins, not the last listed', () => {
    const listedLast = spyHook(() => [user('listed last')]);
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const finalOne = cold('--l|', { l: [user('final phase')] });
      const composed = composeMiddleware([
        { name: 'finalPhase', hookPhase: 'final', convertToLlm: () => finalOne },
        { name: 'listedLast', convertToLlm: listedLast },
      ]);
      expect(composed.description.convertToLlm).toMatchObject({ runs: ['finalPhase'], overridden: ['listedLast'] });
      expectObservable(observed(composed.hooks.convertToLlm!(input, ctx))).toBe('---(r|)', {
        r: [user('final phase')],
      });
      expectSubscriptions(finalOne.subscriptions).toBe('^--!');
    });
    expect(listedLast.calls).toHaveLength(0);
  });

  it('beforeToolCall short-circuits in placed order: a tool-phase guard listed last blocks before the others run', () => {
    const base = hookContext();
    const toolCtx: BeforeToolCallContext = {
      ...base,
      assistantMessage: assistant(''),
      toolCall,
      args: { q: 'x' },
      context: base,
    };
    const later = spyHook(() => undefined);
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const audit = cold('-u|', { u: undefined });
      const guard = cold(' --B|', { B: { block: true, reason: 'no' } });
      const composed = composeMiddleware([
        { name: 'Later', hookPhase: 'final', beforeToolCall: later },
        { name: 'Guard', hookPhase: 'tool', hookOrder: -10, beforeToolCall: () => guard },
        { name: 'Audit', hookPhase: 'run', beforeToolCall: () => audit },
      ]);
      expect(composed.description.beforeToolCall.runs).toEqual(['Audit', 'Guard', 'Later']);
      expectObservable(observed(composed.hooks.beforeToolCall!(toolCtx))).toBe('-----(b|)', {
        b: { block: true, reason: 'no' },
      });
      expectSubscriptions(audit.subscriptions).toBe('^-!');
      expectSubscriptions(guard.subscriptions).toBe('--^--!');
    });
    expect(later.calls).toHaveLength(0);
  });

  it('unsubscribing mid-chain tears down the hook placed first and never calls the rest', () => {
    const rest = spyHook((p: string) => p);
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const slow = cold('-----s|', { s: 's' });
      const composed = composeMiddleware([
        { name: 'rest', transformSystemPrompt: rest },
        appender('first', () => slow, { hookPhase: 'run' }),
      ]);
      expectObservable(observed(composed.hooks.transformSystemPrompt!('', ctx)), '--!').toBe('-');
      expectSubscriptions(slow.subscriptions).toBe('^-!');
    });
    expect(rest.calls).toHaveLength(0);
  });
});
