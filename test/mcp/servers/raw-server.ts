// A hostile MCP server over stdio that writes its JSON-RPC by hand, so it can send what no SDK server would: a result
// nested thousands of levels deep, `result: null`, a server error with code -32000, a result of any size written at
// once. Started as a child process by test/mcp/hostile-stdio.test.ts (this file is its main).
//
// Tools (all take `{}` unless said):
//   deep            { depth }  structuredContent nested `depth` levels (content: [])
//   null_result                answers `"result": null`
//   server_error               answers a JSON-RPC error, code -32000, message "the database is locked"
//   big             { bytes }  a text result of `bytes` characters, written in one write
//   echo            { text }   answers the text

const tools = ['deep', 'null_result', 'server_error', 'big', 'echo'].map((name) => ({
  name,
  description: `raw ${name}`,
  inputSchema: { type: 'object' },
}));

function nested(depth: number): string {
  return `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

function answer(id: unknown, resultJson: string): void {
  process.stdout.write(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${resultJson}}\n`);
}

function handle(message: { id?: unknown; method?: string; params?: Record<string, unknown> }): void {
  if (message.id === undefined) return; // a notification
  switch (message.method) {
    case 'initialize':
      return answer(
        message.id,
        JSON.stringify({
          protocolVersion: (message.params?.protocolVersion as string | undefined) ?? '2025-06-18',
          capabilities: { tools: {} },
          serverInfo: { name: 'raw', version: '0.0.1' },
        }),
      );
    case 'tools/list':
      return answer(message.id, JSON.stringify({ tools }));
    case 'tools/call': {
      const name = message.params?.name;
      const args = (message.params?.arguments ?? {}) as Record<string, unknown>;
      const depth = typeof args.depth === 'number' ? args.depth : 5_000;
      switch (name) {
        case 'deep':
          return answer(message.id, `{"content":[],"structuredContent":${nested(depth)}}`);
        case 'null_result':
          return answer(message.id, 'null');
        case 'server_error':
          process.stdout.write(
            `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"error":{"code":-32000,"message":"the database is locked"}}\n`,
          );
          return;
        case 'big': {
          const bytes = typeof args.bytes === 'number' ? args.bytes : 1_000_000;
          return answer(message.id, `{"content":[{"type":"text","text":"${'y'.repeat(bytes)}"}]}`);
        }
        case 'echo':
          return answer(message.id, JSON.stringify({ content: [{ type: 'text', text: String(args.text) }] }));
        default:
          return answer(message.id, JSON.stringify({ content: [{ type: 'text', text: 'unknown' }], isError: true }));
      }
    }
    default:
      process.stdout.write(
        `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"error":{"code":-32601,"message":"Method not found"}}\n`,
      );
  }
}

let pending = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk: string) => {
  pending += chunk;
  let index: number;
  while ((index = pending.indexOf('\n')) !== -1) {
    const line = pending.slice(0, index);
    pending = pending.slice(index + 1);
    if (line.trim() !== '') handle(JSON.parse(line) as Parameters<typeof handle>[0]);
  }
});
