/**
 * An MCP tool result as a cubepi tool result, bounded.
 * @module
 */
import { base64ByteLength, fileProblem } from '../types/check-file.js';
import type { FileContent, ToolResultContent } from '../types/content.js';
import type { AgentToolResult } from '../types/tool.js';
import { nestsDeeperThan } from '../tools/nests-deeper-than.js';

/**
 * How deeply a result's `structuredContent` may nest. Deeper is an error result: it is measured before anything
 * recursive (`JSON.stringify`, a checkpoint write) walks it, so a hostile server cannot overflow the stack.
 */
export const MAX_STRUCTURED_DEPTH = 64;

/** The bounds a result is held to (see `McpToolsOptions`). */
export interface ResultLimits {
  /** Characters of text, all blocks together (structured content included). */
  readonly maxResultChars: number;
  /** Base64 characters of one image. */
  readonly maxImageChars: number;
  /** Bytes of one file (audio, a binary resource). */
  readonly maxFileBytes: number;
}

/** What an MCP tool result's `details` carries. */
export interface McpToolDetails {
  /** The server, as named by `McpToolsOptions.name` or its own `serverInfo`. */
  readonly server: string;
  /** The tool's name on the server. */
  readonly tool: string;
  /** The result's `structuredContent`, when it had some and it fits the bounds. */
  readonly structuredContent?: Record<string, unknown>;
  /** Present when something was cut or left out to respect the bounds. */
  readonly truncated?: true;
}

/**
 * Maps a `tools/call` result: text blocks stay text, images stay images, audio and binary resources (`blob`) become
 * file blocks (`data`, the MIME type, a binary resource's name from the last segment of its URI) — or a line saying
 * what was left out and why, for one over `maxFileBytes` or whose bytes are not its MIME type (`fileProblem`) —,
 * embedded text resources become text headed by their URI, resource links a line with the URI. `isError` carries
 * over. `structuredContent` goes to `details` (and, when the result has no content, to the
 * model as JSON text). Text beyond `maxResultChars` (all blocks together) is cut with a note saying how much; an image
 * larger than `maxImageChars` is replaced by a note. `structuredContent` nested deeper than {@link MAX_STRUCTURED_DEPTH}
 * levels makes the whole result an error result. The result is data: nothing in it is interpreted.
 */
export function mapCallResult(
  raw: unknown,
  server: string,
  tool: string,
  limits: ResultLimits,
): AgentToolResult<McpToolDetails> {
  const result = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const structured = result.structuredContent;
  if (nestsDeeperThan(structured, MAX_STRUCTURED_DEPTH)) {
    return {
      content: [
        {
          type: 'text',
          text: `MCP tool ${tool} (server ${server}) returned an invalid result: its structuredContent nests deeper than ${MAX_STRUCTURED_DEPTH} levels`,
        },
      ],
      isError: true,
      details: { server, tool },
    };
  }
  const blocks = Array.isArray(result.content) ? (result.content as unknown[]) : [];
  const content: ToolResultContent[] = [];
  let budget = limits.maxResultChars;
  let truncated = false;
  const addText = (text: string) => {
    if (budget <= 0) {
      truncated = true;
      return;
    }
    if (text.length > budget) {
      content.push({
        type: 'text',
        text: `${text.slice(0, budget)}\n[… ${text.length - budget} more characters cut: the result was too large]`,
      });
      budget = 0;
      truncated = true;
      return;
    }
    content.push({ type: 'text', text });
    budget -= text.length;
  };
  /** Adds `file` when it is a valid file within the bounds; else says why not. */
  const addFile = (file: FileContent): string | undefined => {
    const bytes = typeof file.data === 'string' ? base64ByteLength(file.data) : undefined;
    if (bytes !== undefined && bytes > limits.maxFileBytes) {
      truncated = true;
      return `${bytes} bytes, over the ${limits.maxFileBytes}-byte limit`;
    }
    const problem = fileProblem(file, limits.maxFileBytes);
    if (problem === undefined) content.push(file);
    return problem;
  };
  for (const block of blocks) {
    const item = (typeof block === 'object' && block !== null ? block : {}) as Record<string, unknown>;
    switch (item.type) {
      case 'text':
        addText(stringOr(item.text, ''));
        break;
      case 'image': {
        const data = typeof item.data === 'string' ? item.data : '';
        const mimeType = typeof item.mimeType === 'string' ? item.mimeType : 'application/octet-stream';
        if (data.length > limits.maxImageChars) {
          truncated = true;
          addText(`[image (${mimeType}, ${data.length} base64 characters) left out: too large]`);
        } else content.push({ type: 'image', data, mimeType });
        break;
      }
      case 'audio': {
        const mimeType = stringOr(item.mimeType, 'unknown type');
        const problem = addFile({ type: 'file', mimeType, data: item.data as string });
        if (problem !== undefined) addText(`[audio (${mimeType}) left out: ${problem}]`);
        break;
      }
      case 'resource': {
        const resource = (item.resource ?? {}) as Record<string, unknown>;
        const uri = stringOr(resource.uri, '(no uri)');
        if (typeof resource.text === 'string') addText(`Resource ${uri}:\n${resource.text}`);
        else {
          const mimeType = stringOr(resource.mimeType, 'application/octet-stream');
          const name = nameOf(uri);
          const problem = addFile({ type: 'file', mimeType, data: resource.blob as string, ...(name ? { name } : {}) });
          if (problem !== undefined) addText(`[resource ${uri} (${mimeType}) left out: ${problem}]`);
        }
        break;
      }
      case 'resource_link':
        addText(
          `Resource link: ${stringOr(item.uri, '(no uri)')}${typeof item.name === 'string' ? ` (${item.name})` : ''}`,
        );
        break;
      default:
        // Named without walking it: the type may be any value the server chose.
        addText(
          `[content of type ${typeof item.type === 'string' ? JSON.stringify(item.type) : typeof item.type} left out]`,
        );
    }
  }
  let structuredContent: Record<string, unknown> | undefined;
  if (typeof structured === 'object' && structured !== null && !Array.isArray(structured)) {
    const json = JSON.stringify(structured);
    if (json.length <= limits.maxResultChars) structuredContent = structured as Record<string, unknown>;
    else truncated = true;
    if (blocks.length === 0) addText(json);
  }
  const details: McpToolDetails = {
    server,
    tool,
    ...(structuredContent !== undefined ? { structuredContent } : {}),
    ...(truncated ? { truncated: true as const } : {}),
  };
  return { content, details, ...(result.isError === true ? { isError: true } : {}) };
}

/** The last path segment of `uri` (`file:///reports/q3.pdf` → `q3.pdf`), or undefined. */
function nameOf(uri: string): string | undefined {
  const path = uri.split(/[?#]/, 1)[0]!;
  const last = path.slice(path.lastIndexOf('/') + 1);
  if (last === '') return undefined;
  try {
    return decodeURIComponent(last);
  } catch {
    return last;
  }
}

function stringOr(value: unknown, fallback: string): string {
  return typeof value === 'string' ? value : fallback;
}
