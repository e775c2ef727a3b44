/**
 * `cubepi/mcp`: the tools of Model Context Protocol servers as cubepi tools (`mcpTools`), and an agent or tools
 * served as an MCP server (`serveMcp`). Needs `@modelcontextprotocol/sdk` (an
 * optional peer dependency) and zod 4.2 or later; Node.js for stdio servers.
 * @module
 */
export { mcpTools, type McpProgress, type McpToolSet, type McpToolsOptions, type McpWarning } from './mcp-tools.js';
export { syncMcpTools, type SyncMcpToolsOptions } from './sync-mcp-tools.js';
export type { McpHttpSource, McpSource, McpStdioSource } from './mcp-connection.js';
export type { McpToolDetails } from './mcp-result.js';
export {
  MAX_SCHEMA_CHARS,
  parametersFromJsonSchema,
  type JsonSchemaParameters,
} from '../tools/json-schema-parameters.js';
export { serveMcp, type McpServeEvent, type ServeMcpOptions, type ServeMcpTarget } from './serve-mcp.js';
export { mcpHttpHandler, type McpHttpHandler } from './mcp-http-handler.js';
export { stdioServerTransport, type StdioServerTransportOptions } from './stdio-server-transport.js';
