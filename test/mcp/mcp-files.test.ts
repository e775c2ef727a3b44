// Files over MCP, both ways: cubepi tools returning file blocks served by serveMcp (as the MCP content a client
// reads: audio, embedded resources with blobs, resource links), and read back by mcpTools as the same file blocks.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  defineTool,
  type AgentEvent,
  type AnyAgentTool,
  type FileContent,
  type ToolResultMessage,
} from 'cubepi';
import { mcpTools, serveMcp, type McpToolsOptions } from 'cubepi/mcp';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { collect } from '../helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const b64 = (text: string) => Buffer.from(text, 'latin1').toString('base64');
const PDF = b64('%PDF-1.7\n1 0 obj << /Type /Page >> endobj\n%%EOF\n');
const WAV = b64('RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00');
const PNG = b64('\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR');
const XLSX = b64('PK\x03\x04\x14\x00\x06\x00sheet');
const FILES: readonly FileContent[] = [
  { type: 'file', mimeType: 'application/pdf', data: PDF, name: 'q3 report.pdf' },
  { type: 'file', mimeType: 'audio/wav', data: WAV },
  { type: 'file', mimeType: 'image/png', data: PNG },
  { type: 'file', mimeType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', data: XLSX },
  { type: 'file', mimeType: 'text/csv', url: 'https://example.com/big.csv', name: 'big.csv' },
  { type: 'file', mimeType: 'application/pdf', fileId: 'file-123', name: 'vendor.pdf' },
];

const documents = defineTool({
  name: 'documents',
  description: 'Returns documents',
  parameters: z.object({}),
  execute: () => ({ content: [{ type: 'text', text: 'the files:' }, ...FILES] }),
});

/** `target` served in memory by serveMcp, with an SDK client connected to it. */
async function served(tools: readonly AnyAgentTool[]): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const subscription = serveMcp(tools, serverSide, { name: 'cubepi-files' }).subscribe();
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  await client.connect(clientSide);
  cleanups.push(async () => {
    subscription.unsubscribe();
    await client.close();
  });
  return client;
}

/** An SDK McpServer with one tool answering `content`, connected in memory to a client. */
async function rawServer(content: unknown[]): Promise<Client> {
  const server = new McpServer({ name: 'raw-files', version: '1.0.0' });
  server.registerTool('answer', { description: 'Answers with fixed content' }, () => ({ content }) as never);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  await client.connect(clientSide);
  cleanups.push(async () => {
    await client.close();
    await server.close();
  });
  return client;
}

/** Calls `name` once through an Agent run and returns its tool result. */
async function callThroughAgent(client: Client, name: string, options: McpToolsOptions = {}) {
  const set = mcpTools(client, options);
  cleanups.push(() => set.close());
  const tools = await set.tools();
  const faux = new FauxProvider({ responses: [fauxMessage([fauxToolCall(name, {})]), fauxMessage('done')] });
  const events: AgentEvent[] = await collect(new Agent({ provider: faux, model: 'faux', tools }).prompt$('go'));
  const result = events.flatMap((e) =>
    e.type === 'message_end' && e.message.role === 'toolResult' ? [e.message] : [],
  )[0] as ToolResultMessage;
  return result;
}

describe('files over MCP', () => {
  it('serveMcp sends a file block as MCP content: image, audio, an embedded resource, a resource link, a note', async () => {
    const client = await served([documents]);
    const result = await client.callTool({ name: 'documents', arguments: {} });
    expect(result.isError).toBeUndefined();
    expect(result.content).toEqual([
      { type: 'text', text: 'the files:' },
      {
        type: 'resource',
        resource: { uri: 'cubepi:file/q3%20report.pdf', mimeType: 'application/pdf', blob: PDF },
      },
      { type: 'audio', data: WAV, mimeType: 'audio/wav' },
      { type: 'image', data: PNG, mimeType: 'image/png' },
      {
        type: 'resource',
        resource: {
          uri: 'cubepi:file/file-4',
          mimeType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
          blob: XLSX,
        },
      },
      { type: 'resource_link', uri: 'https://example.com/big.csv', name: 'big.csv', mimeType: 'text/csv' },
      { type: 'text', text: '[file vendor.pdf (application/pdf) not sent: it is held as a vendor file id (file-123)]' },
    ]);
  });

  it('round trip: mcpTools reads them back as the same file blocks, bytes identical, names kept', async () => {
    const client = await served([documents]);
    const result = await callThroughAgent(client, 'documents');
    expect(result.isError).toBe(false);
    expect(result.content).toEqual([
      { type: 'text', text: 'the files:' },
      FILES[0],
      FILES[1],
      { type: 'image', data: PNG, mimeType: 'image/png' },
      { ...FILES[3], name: 'file-4' },
      { type: 'text', text: 'Resource link: https://example.com/big.csv (big.csv)' },
      { type: 'text', text: '[file vendor.pdf (application/pdf) not sent: it is held as a vendor file id (file-123)]' },
    ]);
  });

  it('a file the server sends that is not what it says, or over maxFileBytes, is left out with a note', async () => {
    const client = await rawServer([
      { type: 'audio', data: b64('%PDF-1.7'), mimeType: 'audio/mpeg' },
      { type: 'resource', resource: { uri: 'file:///a/big.pdf', mimeType: 'application/pdf', blob: PDF } },
      { type: 'resource', resource: { uri: 'file:///a/ok.wav', mimeType: 'audio/wav', blob: WAV } },
    ]);
    const result = await callThroughAgent(client, 'answer', { maxFileBytes: 40 });
    // (The SDK's client refuses a result whose base64 does not decode before it reaches us.)
    expect(result.isError).toBe(false);
    expect(result.content).toEqual([
      {
        type: 'text',
        text: '[audio (audio/mpeg) left out: the bytes of a file block declared audio/mpeg are not an MP3 file (ID3 or an MPEG frame)]',
      },
      {
        type: 'text',
        text: `[resource file:///a/big.pdf (application/pdf) left out: ${Buffer.from(PDF, 'base64').length} bytes, over the 40-byte limit]`,
      },
      { type: 'file', mimeType: 'audio/wav', data: WAV, name: 'ok.wav' },
    ]);
    expect(result.details).toMatchObject({ truncated: true });
  });

  it('maxFileBytes must be a positive number', () => {
    expect(() => mcpTools({ url: 'http://127.0.0.1:1/mcp' }, { maxFileBytes: 0 })).toThrow(
      'mcpTools: `maxFileBytes` must be a positive number',
    );
  });
});
