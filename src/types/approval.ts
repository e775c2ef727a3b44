import type { ImageContent, TextContent } from './content.js';

/**
 * Approval requests: a tool call held for a person, and the answers it can get.
 * @module
 */

/** A tool call waiting for a person (a `pause` decision of `beforeToolCall`, e.g. a `ToolGuard` policy's `ask`). */
export interface ApprovalRequest {
  /**
   * The request's **resume token** (the seed's `resumeToken`): the one id to answer with, `agent.respond(requestId, …)`,
   * in this process or in any other that opens the same thread, over HTTP and through the run queue. The runtime's
   * token is `<runId>:<toolCallId>` unless the pause named one (`Decision.pause({ resumeToken })`). Unique among the
   * requests of a suspended batch.
   */
  readonly requestId: string;
  readonly toolCallId: string;
  readonly toolName: string;
  /** The call's arguments, validated. */
  readonly args: Readonly<Record<string, unknown>>;
  /** Why it needs approval (the policy's words). */
  readonly reason: string;
  /** Anything the policy attached for the person answering (JSON). */
  readonly payload?: unknown;
  /**
   * When the approval lapses (epoch ms). The request stays answerable after it, but an approval (or edit) that resumes
   * the run later than this does not run the call: its outcome is `expired`, and the model is told so.
   */
  readonly expiresAt?: number | undefined;
  /**
   * The call is a client tool's (`AgentTool.client`, reason `client_tool`): the client runs it and answers with
   * `{ output }` (or `{ deny }`); an approval or an edit of it is refused.
   */
  readonly clientTool?: true | undefined;
}

/**
 * An answer to an {@link ApprovalRequest}: run the call, refuse it (the model is told `deny`'s reason), or run it
 * with other arguments (validated again against the tool's schema). `remember: 'thread'` on an approval also approves
 * later calls of the same tool on this thread: the resumed run stores `approvals.allow.<toolName>: true` in the run
 * state (producer `approvals`), which `ToolGuard` reads before asking again.
 *
 * `output` answers a client tool's call (`ApprovalRequest.clientTool`) with what the client's tool returned: it
 * becomes the call's one result (text, or text and image blocks; `isError` marks a failure), and the call does not
 * run here. Given for any other request it is refused with an `InvalidInputError`; a client tool's call takes only
 * `output` or `deny` (an aborted one gets an `aborted` result like any).
 */
export type ApprovalAnswer =
  | { readonly approve: true; readonly remember?: 'thread' | undefined }
  | { readonly deny: string }
  | { readonly edit: Readonly<Record<string, unknown>> }
  | { readonly output: string | readonly (TextContent | ImageContent)[]; readonly isError?: boolean | undefined };

/**
 * What `beforeToolCall` sees of a held call that is resumed (`BeforeToolCallContext.approval`): the request it
 * answers and the answer, an approval or an edit (`args` is then the edit, validated). A denied, aborted or expired
 * call is not asked again.
 */
export interface ResumedApproval {
  readonly requestId: string;
  readonly answer: Exclude<ApprovalAnswer, { readonly deny: string } | { readonly output: unknown }>;
}

/** The state key a remembered approval of `toolName` sets to `true` (`approvals.allow.<toolName>`). */
export function rememberedApprovalKey(toolName: string): string {
  return `approvals.allow.${toolName}`;
}
