// An MCP server written with the SDK, for the cubepi/mcp tests: run as a stdio child process (this file is its main
// when started directly) or served over Streamable HTTP in the test process (createToolsServer).
//
// It records what it sees on its side — every call, every cancellation — through `record`: a JSON line appended to
// the file named by MCP_LOG (stdio), or a callback (HTTP). The tests assert on that record.
import { appendFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

export interface ServerRecord {
  readonly event: 'call' | 'cancelled';
  readonly tool: string;
  readonly args?: unknown;
  readonly pid: number;
}

/** A one-line PDF and a WAV header: bytes that are what their MIME types say. */
const PDF = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Page >> endobj\n%%EOF\n').toString('base64');
const WAV = Buffer.from('RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00', 'latin1').toString('base64');
const PIXEL = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

export function createToolsServer(record: (entry: ServerRecord) => void): McpServer {
  const server = new McpServer({ name: 'test-tools', version: '1.0.0' });
  const called = (tool: string, args?: unknown) => record({ event: 'call', tool, args, pid: process.pid });

  server.registerTool(
    'echo',
    { description: 'Echoes its text', inputSchema: { text: z.string().min(1) } },
    ({ text }) => (called('echo', { text }), { content: [{ type: 'text', text: `echo: ${text}` }] }),
  );
  server.registerTool(
    'add',
    {
      description: 'Adds two numbers',
      inputSchema: { a: z.number(), b: z.number().int() },
      outputSchema: { sum: z.number() },
    },
    ({ a, b }) => (
      called('add', { a, b }),
      { content: [{ type: 'text', text: String(a + b) }], structuredContent: { sum: a + b } }
    ),
  );
  server.registerTool('wait_for_cancel', { description: 'Runs until cancelled' }, (extra) => {
    called('wait_for_cancel');
    return new Promise((resolve) => {
      extra.signal.addEventListener('abort', () => {
        record({ event: 'cancelled', tool: 'wait_for_cancel', pid: process.pid });
        resolve({ content: [{ type: 'text', text: 'cancelled' }] });
      });
    });
  });
  server.registerTool(
    'progress',
    { description: 'Reports progress, then finishes', inputSchema: { steps: z.number().int().min(1) } },
    async ({ steps }, extra) => {
      called('progress', { steps });
      const progressToken = extra._meta?.progressToken;
      for (let i = 1; i <= steps; i++) {
        if (progressToken !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken, progress: i, total: steps, message: `step ${i} of ${steps}` },
          });
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      // The SDK's client handles a notification a microtask after reading it, and drops one that is read together with
      // its response (the request is over by then): the answer waits, so each notification is read before it.
      await new Promise((resolve) => setTimeout(resolve, 100));
      return { content: [{ type: 'text', text: 'all steps done' }] };
    },
  );
  server.registerTool('media', { description: 'Returns an image, a resource and a link' }, () => {
    called('media');
    return {
      content: [
        { type: 'text', text: 'here:' },
        { type: 'image', data: PIXEL, mimeType: 'image/png' },
        { type: 'resource', resource: { uri: 'file:///notes.txt', mimeType: 'text/plain', text: 'the notes' } },
        { type: 'resource', resource: { uri: 'file:///blob.bin', mimeType: 'application/zip', blob: 'AAAA' } },
        { type: 'resource', resource: { uri: 'file:///docs/q3.pdf', mimeType: 'application/pdf', blob: PDF } },
        { type: 'audio', data: WAV, mimeType: 'audio/wav' },
        { type: 'resource_link', uri: 'file:///big.csv', name: 'big.csv' },
      ],
    };
  });
  server.registerTool('fail', { description: 'Fails' }, () => {
    called('fail');
    return { content: [{ type: 'text', text: 'the disk is full' }], isError: true };
  });
  server.registerTool('pid', { description: 'Says which process serves it' }, () => {
    called('pid');
    return { content: [{ type: 'text', text: String(process.pid) }] };
  });
  server.registerTool('crash', { description: 'Exits the process in mid-call' }, () => {
    called('crash');
    setTimeout(() => process.exit(1), 10);
    return new Promise(() => undefined);
  });
  server.registerTool('add_tool', { description: 'Adds a tool named "added" to this server' }, () => {
    called('add_tool');
    // Registering on a connected server sends notifications/tools/list_changed.
    server.registerTool('added', { description: 'Added at run time' }, () => ({
      content: [{ type: 'text', text: 'I am new' }],
    }));
    return { content: [{ type: 'text', text: 'added' }] };
  });
  server.registerTool('huge', { description: 'Returns 10 MB of text' }, () => {
    called('huge');
    return { content: [{ type: 'text', text: 'x'.repeat(10 * 1024 * 1024) }] };
  });
  return server;
}

// Started directly (stdio): serve on stdin/stdout, recording to MCP_LOG.
if (process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  const log = process.env.MCP_LOG;
  const server = createToolsServer((entry) => {
    if (log !== undefined) appendFileSync(log, `${JSON.stringify(entry)}\n`);
  });
  await server.connect(new StdioServerTransport());
}
