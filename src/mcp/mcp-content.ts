/**
 * A cubepi tool result's content as MCP content: what `serveMcp` sends for each block.
 * @module
 */
import type { ToolResultContent } from '../types/content.js';
import { fileKind } from '../types/file-kind.js';

/** The content an MCP tool answers with (what `serveMcp` sends). */
export type McpContent =
  | { type: 'text'; text: string }
  | { type: 'image'; data: string; mimeType: string }
  | { type: 'audio'; data: string; mimeType: string }
  | { type: 'resource'; resource: { uri: string; mimeType: string; blob: string } }
  | { type: 'resource_link'; uri: string; name: string; mimeType: string };

/**
 * One block of a tool result as MCP content. Text and images go as they are; a file block by its source and kind:
 * - `data`: an image as `image`, audio as `audio`, any other file as an embedded `resource` with its bytes in `blob`
 *   and the URI `cubepi:file/<name>` (`name`, else `file-<index>`), so the client's file keeps its name;
 * - `url`: a `resource_link` to it;
 * - `fileId` (a vendor's file id, meaningless to another client) or `ref` (not resolved here): a line saying so.
 */
export function mcpContentOf(block: ToolResultContent, index: number): McpContent {
  if (block.type === 'text') return { type: 'text', text: block.text };
  if (block.type === 'image') return { type: 'image', data: block.data, mimeType: block.mimeType };
  const { mimeType, name } = block;
  if (block.data !== undefined) {
    const kind = fileKind(mimeType);
    if (kind === 'image') return { type: 'image', data: block.data, mimeType };
    if (kind === 'audio') return { type: 'audio', data: block.data, mimeType };
    const uri = `cubepi:file/${encodeURIComponent(name ?? `file-${index}`)}`;
    return { type: 'resource', resource: { uri, mimeType, blob: block.data } };
  }
  if (block.url !== undefined) return { type: 'resource_link', uri: block.url, name: name ?? block.url, mimeType };
  const held = block.fileId !== undefined ? `a vendor file id (${block.fileId})` : 'a blob reference';
  return { type: 'text', text: `[file${name ? ` ${name}` : ''} (${mimeType}) not sent: it is held as ${held}]` };
}
