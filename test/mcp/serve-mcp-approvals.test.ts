// serveMcp with an agent whose ToolGuard asks before a call: the approval goes to the MCP client. A client that
// declares elicitation is asked (elicitation/create) inside the call; one that does not gets the pending request and
// the answer_approval tool. Real SDK clients, over the SDK's in-memory transport and over Streamable HTTP.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ElicitRequestSchema, type ElicitRequest, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, defineTool, ToolGuard } from 'cubepi';
import { serveMcp, type ServeMcpTarget } from 'cubepi/mcp';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { serveMcpHttp } from './serve-mcp-http.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** An agent that sends an email only with approval: the run is `send_email`, then a reply saying what happened. */
function emailAgent(sent: string[]) {
  const sendEmail = defineTool({
    name: 'send_email',
    description: 'Sends an email',
    parameters: z.object({ to: z.string() }),
    execute: (_id, { to }) => (sent.push(to), `sent to ${to}`),
  });
  return new Agent({
    provider: new FauxProvider({
      responses: [
        fauxMessage([fauxToolCall('send_email', { to: 'ana@example.com' })]),
        (messages) => {
          const result = messages.at(-1);
          const text =
            result?.role === 'toolResult' ? result.content.map((b) => (b.type === 'text' ? b.text : '')) : [];
          return fauxMessage(`Done: ${text.join('')}`);
        },
      ],
    }),
    model: 'faux',
    tools: [sendEmail],
    middleware: [new ToolGuard({ policy: ToolGuard.byName({ ask: ['send_email'] }) })],
  });
}

type Connect = (target: ServeMcpTarget, client: Client) => Promise<void>;

const inMemory: Connect = async (target, client) => {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const subscription = serveMcp(target, serverSide).subscribe();
  await client.connect(clientSide);
  cleanups.push(async () => {
    await client.close();
    subscription.unsubscribe();
  });
};

const http: Connect = async (target, client) => {
  const served = await serveMcpHttp(target);
  await client.connect(new StreamableHTTPClientTransport(new URL(served.url)));
  cleanups.push(async () => {
    await client.close();
    await served.close();
  });
};

function text(result: object): string {
  return ((result as { content: { text?: string }[] }).content ?? []).map((block) => block.text ?? '').join('');
}

/** A client that declares form elicitation and answers each request with `answer` (recording what it was asked). */
function elicitingClient(answer: (request: ElicitRequest) => ElicitResult) {
  const asked: ElicitRequest[] = [];
  const client = new Client({ name: 'eliciting', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler(ElicitRequestSchema, (request) => (asked.push(request), answer(request)));
  return { client, asked };
}

describe.each([
  ['in-memory transport', inMemory],
  ['Streamable HTTP', http],
])('serveMcp: approvals over %s', (_label, connect) => {
  it('a client that declares elicitation is asked in the call; approving runs the tool and answers with the reply', async () => {
    const sent: string[] = [];
    const { client, asked } = elicitingClient(() => ({ action: 'accept', content: { approve: true } }));
    await connect(emailAgent(sent), client);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['ask_agent']);
    const answer = await client.callTool({ name: 'ask_agent', arguments: { prompt: 'Email Ana' } });
    expect(answer.isError).toBeFalsy();
    expect(text(answer)).toBe('Done: sent to ana@example.com');
    expect(sent).toEqual(['ana@example.com']);
    expect(asked).toHaveLength(1);
    expect(asked[0]!.params).toMatchObject({
      message:
        'The agent asks to call send_email with {"to":"ana@example.com"}: Tool send_email needs approval. Approve?',
      requestedSchema: { type: 'object', required: ['approve'] },
    });
  });

  it('refusing (or declining) denies the call: the tool never runs and the agent is told why', async () => {
    const sent: string[] = [];
    const { client } = elicitingClient(() => ({ action: 'accept', content: { approve: false, reason: 'Not today' } }));
    await connect(emailAgent(sent), client);
    const refused = await client.callTool({ name: 'ask_agent', arguments: { prompt: 'Email Ana' } });
    expect(text(refused)).toBe('Done: Not today');
    const declining = elicitingClient(() => ({ action: 'decline' }));
    await connect(emailAgent(sent), declining.client);
    const declined = await declining.client.callTool({ name: 'ask_agent', arguments: { prompt: 'Email Ana' } });
    expect(text(declined)).toBe('Done: Declined by the user');
    expect(sent).toEqual([]);
  });

  it('a client without elicitation gets the pending request, and answer_approval resumes the run', async () => {
    const sent: string[] = [];
    const client = new Client({ name: 'plain', version: '1.0.0' });
    // A fresh agent per call: the suspended one is kept for the answer.
    await connect(() => emailAgent(sent), client);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['ask_agent', 'answer_approval']);
    const waiting = await client.callTool({ name: 'ask_agent', arguments: { prompt: 'Email Ana' } });
    expect(waiting.isError).toBeFalsy();
    const { pending } = waiting.structuredContent as { pending: { requestId: string; toolName: string }[] };
    expect(pending).toEqual([
      {
        requestId: expect.any(String),
        toolName: 'send_email',
        args: { to: 'ana@example.com' },
        reason: 'Tool send_email needs approval',
      },
    ]);
    const requestId = pending[0]!.requestId;
    expect(text(waiting)).toBe(
      [
        'The agent waits for approval before it goes on:',
        `- request ${requestId}: send_email with {"to":"ana@example.com"}: Tool send_email needs approval`,
        'Answer each with the answer_approval tool: { "requestId": "…", "approve": true }, or { "requestId": "…", "approve": false, "reason": "…" }.',
      ].join('\n'),
    );
    expect(sent).toEqual([]);
    const unknown = await client.callTool({ name: 'answer_approval', arguments: { requestId: 'nope', approve: true } });
    expect(unknown.isError).toBe(true);
    expect(text(unknown)).toBe(
      'No approval request nope is waiting here (unknown, answered already, or its run ended)',
    );
    const done = await client.callTool({ name: 'answer_approval', arguments: { requestId, approve: true } });
    expect(done.isError).toBeFalsy();
    expect(text(done)).toBe('Done: sent to ana@example.com');
    expect(sent).toEqual(['ana@example.com']);
    // Answered once: a second answer finds nothing waiting.
    const again = await client.callTool({ name: 'answer_approval', arguments: { requestId, approve: true } });
    expect(again.isError).toBe(true);
    expect(sent).toEqual(['ana@example.com']);
  });
});

describe('serveMcp: approvals asked of a client that fails to answer', () => {
  it('an elicitation the client errors on ends the run, so the agent takes the next call', async () => {
    const sent: string[] = [];
    const client = new Client({ name: 'broken', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, () => {
      throw new Error('no screen to ask on');
    });
    const agent = emailAgent(sent);
    await inMemory(agent, client);
    const failed = await client.callTool({ name: 'ask_agent', arguments: { prompt: 'Email Ana' } });
    expect(failed.isError).toBe(true);
    expect(text(failed)).toMatch(
      /^The agent asked to call send_email, and the approval could not be asked of the client \(.*no screen to ask on.*\): the run was ended$/,
    );
    expect(sent).toEqual([]);
    expect(agent.pending).toEqual([]);
  });
});
