/**
 * Estimating the tokens of a request without a network call: a heuristic per provider family.
 * @module
 */
import type { Message } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { ToolDefinition } from '../types/provider.js';
import { estimateFileTokens, type FileTokenRates } from './estimate-file-tokens.js';

/** What a request sends, as far as its size goes. */
export interface TokenRequest {
  readonly model: Model;
  readonly messages: readonly Message[];
  readonly systemPrompt?: string | undefined;
  readonly tools?: readonly ToolDefinition[] | undefined;
}

/** The constants of one provider family's heuristic (see `docs/context.md` for how they were measured). */
interface Family extends FileTokenRates {
  /** Characters of prose per token. */
  readonly charsPerToken: number;
  /** Characters of JSON (tool schemas, tool-call arguments) per token. */
  readonly jsonCharsPerToken: number;
  /** Tokens every request costs, whatever it holds. */
  readonly base: number;
  /** Tokens each message's framing costs (role markers). */
  readonly perMessage: number;
  /** Tokens each tool definition's framing costs, besides its schema. */
  readonly perTool: number;
  /** Tokens of one image (a typical ~1 megapixel picture; the real count depends on its size). */
  readonly image: number;
}

// Fitted on the recorded requests whose real `usage` the provider fixtures hold (test/token-estimate.test.ts). The
// file rates are the vendors' published figures, rounded up (docs/files.md, "Token estimate"): Anthropic reads a PDF
// page as its text and a picture (1,500–3,000 tokens), OpenAI likewise; Gemini bills 258 tokens a page, 32 a second of
// audio and about 300 a second of video, and OpenAI's audio input runs about 10 tokens a second.
const FAMILIES: Readonly<Record<'anthropic' | 'openai' | 'other', Family>> = {
  anthropic: {
    ...{ charsPerToken: 3.5, jsonCharsPerToken: 3.2, base: 30, perMessage: 4, perTool: 20, image: 1_600 },
    ...{ pdfPage: 2_300, audioSecond: 32, videoSecond: 300 },
  },
  openai: {
    ...{ charsPerToken: 4, jsonCharsPerToken: 5.5, base: 3, perMessage: 3, perTool: 12, image: 765 },
    ...{ pdfPage: 1_800, audioSecond: 10, videoSecond: 300 },
  },
  other: {
    ...{ charsPerToken: 3.5, jsonCharsPerToken: 3.5, base: 10, perMessage: 4, perTool: 16, image: 1_600 },
    ...{ pdfPage: 1_500, audioSecond: 32, videoSecond: 300 },
  },
};

function familyOf(model: Model): Family {
  const provider = model.provider.toLowerCase();
  if (provider.startsWith('anthropic')) return FAMILIES.anthropic;
  if (provider.startsWith('openai')) return FAMILIES.openai;
  return FAMILIES.other;
}

/** Runs of 16+ hex or base64 characters, and non-ASCII text (any code point above U+007F). */
const DENSE = /[0-9A-Fa-f+/=]{16,}|[\u0080-\u{10FFFF}]+/gu;

/**
 * Tokens of one piece of text: characters over the family's ratio, with runs of characters that tokenise badly
 * (digits, hex, base64, symbols) counted at two characters a token.
 */
function textTokens(text: string, charsPerToken: number): number {
  if (text.length === 0) return 0;
  let dense = 0;
  // Long runs of hex or base64-like characters (ids, hashes, signatures) and non-ASCII text tokenise far worse than
  // prose: two characters a token is what the recorded figures show for them.
  for (const match of text.matchAll(DENSE)) dense += match[0].length;
  return Math.ceil((text.length - dense) / charsPerToken + dense / 2);
}

// Messages are immutable, so a message's estimate is computed once per family: a run's transcript is estimated at
// every model attempt (the capability check, ContextBudget), and re-scanning every earlier message each time made that
// O(turns²) (9 ms an attempt at 2,000 messages of ~400 characters, against ~0.1 ms cached).
const messageCache = new Map<Family, WeakMap<Message, number>>();

function messageTokens(message: Message, family: Family): number {
  let cache = messageCache.get(family);
  if (cache === undefined) messageCache.set(family, (cache = new WeakMap()));
  let tokens = cache.get(message);
  if (tokens === undefined) cache.set(message, (tokens = countMessageTokens(message, family)));
  return tokens;
}

function countMessageTokens(message: Message, family: Family): number {
  let tokens = family.perMessage;
  const content = message.content;
  if (typeof content === 'string') return tokens + textTokens(content, family.charsPerToken);
  for (const block of content) {
    switch (block.type) {
      case 'text':
        tokens += textTokens(block.text, family.charsPerToken);
        break;
      case 'thinking':
        // Redacted thinking travels as an opaque blob; the model reads it as about as many tokens as it produced.
        tokens += textTokens(block.thinking, family.charsPerToken);
        break;
      case 'image':
        tokens += family.image;
        break;
      case 'file':
        tokens += estimateFileTokens(block, family);
        break;
      case 'toolCall':
        tokens += textTokens(block.name, family.charsPerToken) + jsonTokens(block.arguments, family) + 4;
        break;
    }
  }
  return tokens;
}

function jsonTokens(value: unknown, family: Family): number {
  let text: string;
  try {
    text = JSON.stringify(value) ?? '';
  } catch {
    text = '';
  }
  return Math.ceil(text.length / family.jsonCharsPerToken);
}

const toolCache = new WeakMap<ToolDefinition, Map<Family, number>>();

function toolTokens(tool: ToolDefinition, family: Family): number {
  let byFamily = toolCache.get(tool);
  let tokens = byFamily?.get(family);
  if (tokens !== undefined) return tokens;
  tokens =
    family.perTool +
    textTokens(tool.name, family.charsPerToken) +
    textTokens(tool.description, family.charsPerToken) +
    jsonTokens(tool.inputSchema, family);
  if (byFamily === undefined) toolCache.set(tool, (byFamily = new Map<Family, number>()));
  byFamily.set(family, tokens);
  return tokens;
}

/**
 * The tokens of one piece of text, by `model`'s provider family (the generic family when no model is given): the
 * same heuristic {@link estimateTokens} applies to a message's text, without a message's framing.
 *
 * @example
 * estimateTextTokens('How long is this?'); // 5
 */
export function estimateTextTokens(text: string, model?: Model): number {
  return textTokens(text, (model === undefined ? FAMILIES.other : familyOf(model)).charsPerToken);
}

/** The tokens of `messages` alone (no base cost, no system prompt, no tools), by `model`'s family. */
export function estimateMessageTokens(model: Model, messages: readonly Message[]): number {
  const family = familyOf(model);
  let tokens = 0;
  for (const message of messages) tokens += messageTokens(message, family);
  return tokens;
}

/**
 * An estimate of the input tokens of a request: the messages, the system prompt and the tool definitions, counted by
 * a heuristic for the model's provider family (`anthropic`, `openai`, else a generic one). No network call, no
 * tokenizer: good enough to plan with, not to bill. On the recorded requests of the provider fixtures it lands within
 * the bound `docs/context.md` states; {@link TokenCalibration} corrects it with the provider's own count of the
 * previous request as a thread grows.
 *
 * @example
 * estimateTokens({ model, messages: agent.state.messages, systemPrompt: agent.state.systemPrompt });
 */
export function estimateTokens(request: TokenRequest): number {
  return estimateTokensWith(request, estimateMessageTokens(request.model, request.messages));
}

/**
 * {@link estimateTokens} given the tokens of `request.messages` (`estimateMessageTokens`, or a running sum of it kept
 * by the caller). @internal
 */
export function estimateTokensWith(request: TokenRequest, messageTokens: number): number {
  const family = familyOf(request.model);
  let tokens = family.base + messageTokens;
  if (request.systemPrompt) tokens += family.perMessage + textTokens(request.systemPrompt, family.charsPerToken);
  for (const tool of request.tools ?? []) tokens += toolTokens(tool, family);
  return tokens;
}

/**
 * What a message's estimate depends on besides the message: its model's provider family. Two models of one family
 * estimate every message alike, so a running sum is kept per family. @internal
 */
export function tokenFamily(model: Model): object {
  return familyOf(model);
}

/**
 * The tokens a provider counted for a request, from the `usage` of the answer to it: uncached input plus cache reads
 * and writes (`input` excludes cached tokens). `undefined` when the answer reports none.
 */
export function reportedInputTokens(message: Message): number | undefined {
  if (message.role !== 'assistant') return undefined;
  const { usage } = message;
  const tokens = usage.input + usage.cacheRead + usage.cacheWrite;
  return tokens > 0 ? tokens : undefined;
}
