/**
 * Approval requests: a tool call held for a person, and the answers it can get.
 * @module
 */

/** A tool call waiting for a person (a `pause` decision of `beforeToolCall`, e.g. a `ToolGuard` policy's `ask`). */
export interface ApprovalRequest {
  /** The id to answer with (`agent.respond(requestId, …)`). */
  readonly requestId: string;
  readonly toolCallId: string;
  readonly toolName: string;
  /** The call's arguments, validated. */
  readonly args: Readonly<Record<string, unknown>>;
  /** Why it needs approval (the policy's words). */
  readonly reason: string;
  /** Anything the policy attached for the person answering (JSON). */
  readonly payload?: unknown;
}

/**
 * An answer to an {@link ApprovalRequest}: run the call, refuse it (the model is told `deny`'s reason), or run it
 * with other arguments (validated again against the tool's schema).
 */
export type ApprovalAnswer =
  { readonly approve: true } | { readonly deny: string } | { readonly edit: Readonly<Record<string, unknown>> };
