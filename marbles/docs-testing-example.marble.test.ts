// The complete example of docs/testing.md, kept here so the documentation cannot drift from what works.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, type AfterToolCallContext } from 'cubepi';
import { createTestScheduler, fauxMessage, fauxToolCall, runOneTurn, spyHook, toMarbles } from 'cubepi/testing';

describe('my policy stack', () => {
  it('blocks after the quota check, and the audit logger still records the result', () => {
    const auditBefore = spyHook(() => undefined);
    const audited: string[] = [];
    const deploy = defineTool({
      name: 'deploy',
      description: 'Deploys',
      parameters: z.object({}),
      execute: () => 'deployed',
    });

    createTestScheduler(expect).run(({ cold, expectObservable, expectSubscriptions }) => {
      const quotaCheck = cold('30ms (b|)', { b: { block: true, reason: 'quota exceeded' } });
      const run$ = runOneTurn({
        responses: [fauxMessage([fauxToolCall('deploy', {}, { id: 'd1' })])],
        tools: [deploy],
        middleware: [
          { name: 'RateLimiter', beforeToolCall: () => quotaCheck },
          {
            name: 'AuditLogger',
            beforeToolCall: auditBefore,
            afterToolCall: (ctx: AfterToolCallContext) => void audited.push(`${ctx.toolCall.id}:${ctx.isError}`),
          },
        ],
      });

      // m: the model answered; x: a tool call ended with an error; e: the run ended.
      const marks = toMarbles((e) =>
        e.type === 'message_end' && e.message.role === 'assistant'
          ? 'm'
          : e.type === 'tool_execution_end'
            ? e.isError
              ? 'x'
              : 'o'
            : e.type === 'agent_end'
              ? 'e'
              : undefined,
      );
      expectObservable(run$.pipe(marks)).toBe('m 29ms (xe|)');
      expectSubscriptions(quotaCheck.subscriptions).toBe('^ 29ms !');
    });

    expect(auditBefore.calls).toHaveLength(0); // the block short-circuited the chain
    expect(audited).toEqual(['d1:true']); // afterToolCall is another hook: it ran
  });
});
