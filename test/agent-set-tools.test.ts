// Agent.setTools and the loop's getTools: a new tool set reaches the next model call, a running batch keeps its own,
// and bad tool sets and limits are refused with typed errors.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  ConfigurationError,
  defineTool,
  InvalidInputError,
  runAgentLoop,
  userMessage,
  type AnyAgentTool,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { collect, resultText } from './helpers.js';

const tool = (name: string, execute: () => string): AnyAgentTool =>
  defineTool({ name, description: name, parameters: z.object({}), execute });

describe('Agent.setTools', () => {
  it('a change during a batch reaches the next model call; the batch keeps the tools it started with', async () => {
    const requests: string[][] = [];
    const late = tool('late', () => 'late ran');
    const holder: { agent?: Agent } = {};
    const adder = tool('adder', () => {
      holder.agent!.setTools([...holder.agent!.state.tools, late]);
      return 'added';
    });
    const faux = new FauxProvider({
      responses: [
        (_m, _model, { tools }) => (
          requests.push(tools.map((t) => t.name)),
          fauxMessage([fauxToolCall('adder', {}), fauxToolCall('late', {})])
        ),
        (_m, _model, { tools }) => (requests.push(tools.map((t) => t.name)), fauxMessage([fauxToolCall('late', {})])),
        fauxMessage('done'),
      ],
    });
    const agent = new Agent({ provider: faux, model: 'faux', tools: [adder], toolExecution: 'sequential' });
    holder.agent = agent;
    const added = await agent.prompt('go');
    const results = added.filter((message) => message.role === 'toolResult');
    expect(results.map((result) => [result.toolName, result.isError])).toEqual([
      ['adder', false],
      ['late', true],
      ['late', false],
    ]);
    expect(resultText(results[2]!)).toBe('late ran');
    expect(requests).toEqual([['adder'], ['adder', 'late']]);
    expect(agent.state.tools.map((t) => t.name)).toEqual(['adder', 'late']);
  });

  it('refuses a tool set with two tools of one name, and keeps the tools it had', () => {
    const one = tool('one', () => '1');
    const agent = new Agent({ provider: new FauxProvider(), model: 'faux', tools: [one] });
    expect(() => agent.setTools([one, tool('one', () => '2')])).toThrow(InvalidInputError);
    expect(() => agent.setTools([one, tool('one', () => '2')])).toThrow('setTools(): two tools are named "one"');
    expect(agent.state.tools).toEqual([one]);
  });
});

describe('runAgentLoop options for changing tools and nested runs', () => {
  const base = {
    provider: new FauxProvider({ responses: [fauxMessage('hi')] }),
    model: { id: 'faux', provider: 'faux' },
  };

  it('fails the run with a ConfigurationError when getTools gives an invalid set', async () => {
    const bad = [tool('x', () => 'x'), tool('x', () => 'y')];
    await expect(collect(runAgentLoop({ ...base, prompts: [userMessage('hi')], getTools: () => bad }))).rejects.toThrow(
      'getTools: two tools are named "x"',
    );
  });

  it('refuses invalid budget and limits at once', () => {
    expect(() => runAgentLoop({ ...base, budget: {} })).toThrow(ConfigurationError);
    expect(() => runAgentLoop({ ...base, budget: { usd: -1 } })).toThrow('`budget` must give a positive');
    expect(() => runAgentLoop({ ...base, limits: { deadlineAt: 'soon' as unknown as number } })).toThrow(
      '`limits.deadlineAt` must be a time',
    );
    expect(() => runAgentLoop({ ...base, getTools: [] as unknown as () => AnyAgentTool[] })).toThrow(
      '`getTools` must be a function',
    );
  });
});
