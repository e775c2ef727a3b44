/**
 * Content blocks: the parts a message is made of. Plain JSON values, treated as immutable.
 * @module
 */

/** A run of text, from the user, the model or a tool. */
export interface TextContent {
  readonly type: 'text';
  readonly text: string;
  /**
   * Provider data replayed with the block on the next request, opaque to everyone else. OpenAI Responses stores the
   * id of the output message item here: a replayed reasoning item must be followed by the item it produced, by id.
   * Dropped when the transcript is sent to another provider.
   */
  readonly signature?: string;
}

/**
 * Model reasoning. `signature` is the provider's proof of authenticity (Anthropic), replayed verbatim on the next
 * request; `redacted: true` marks an opaque block whose `thinking` holds encrypted data that only the same provider
 * can read back.
 */
export interface ThinkingContent {
  readonly type: 'thinking';
  readonly thinking: string;
  readonly signature?: string;
  readonly redacted?: boolean;
}

/** An image, base64-encoded (`data`) with its MIME type (`image/png`, `image/jpeg`, …). */
export interface ImageContent {
  readonly type: 'image';
  readonly data: string;
  readonly mimeType: string;
}

/**
 * A tool call made by the model. `arguments` is the parsed JSON object.
 *
 * When the model's argument text never became a valid JSON object, `arguments` is `{}` and `invalidArguments` holds
 * the raw text: the loop does not execute such a call and answers it with an error result that quotes the text, so
 * the model can correct itself.
 */
export interface ToolCall {
  readonly type: 'toolCall';
  readonly id: string;
  readonly name: string;
  readonly arguments: Readonly<Record<string, unknown>>;
  readonly invalidArguments?: string;
  /**
   * Provider data replayed with the call on the next request, byte for byte, opaque to everyone else: Gemini's
   * `thoughtSignature` on a function call (Gemini 3 rejects a replayed call without it). Dropped when the transcript
   * is sent to another provider or model.
   */
  readonly signature?: string;
}

/**
 * A file: a document, an audio clip, a spreadsheet… `mimeType` says what it is (`application/pdf`, `audio/wav`,
 * `text/csv`). Exactly one of `data` (base64 bytes), `url` (fetched by the vendor, for a model that can), `fileId` (a
 * vendor file API's id, sent only to that vendor) or `ref` (stored by reference: a blob store's content address, see
 * {@link BlobRef}; resolved to `data` before a request is sent) holds its content. `size` is the byte length, where
 * known (always with `ref`). Each provider maps the kinds its models accept (see `docs/files.md`); a model that cannot
 * take one is refused before the request (`model_incapable`).
 */
export interface FileContent {
  readonly type: 'file';
  readonly mimeType: string;
  /** A file name shown to the model where the vendor takes one (`report.pdf`). */
  readonly name?: string | undefined;
  readonly data?: string | undefined;
  readonly url?: string | undefined;
  readonly fileId?: string | undefined;
  readonly ref?: BlobRef | undefined;
  readonly size?: number | undefined;
}

/**
 * The content address of bytes kept in a `BlobStore`: `sha256:` and the SHA-256 of the bytes in lowercase hex. The
 * same bytes always have the same address, so a file stored twice is stored once.
 */
export type BlobRef = `sha256:${string}`;

/** What a user message may hold. */
export type UserContent = TextContent | ImageContent | FileContent;
/** What an assistant message may hold. */
export type AssistantContent = TextContent | ThinkingContent | ToolCall;
/** What a tool result may hold. */
export type ToolResultContent = TextContent | ImageContent | FileContent;
