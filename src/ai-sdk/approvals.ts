/**
 * The AI SDK's tool approvals read as rxheal's: {@link approvalsFrom} turns the answers a
 * conversation carries (`tool-approval-response` parts of its last tool message, or the
 * `approval-responded` tool parts of a `useChat` assistant message) into `resumeAgent`'s
 * `approvals`, by tool call id.
 *
 * @module
 */
import type { Approval } from '../sources/agentConfig.js';
import { isObject } from '../adapters/common.js';

/** The parts of a message's content (`ModelMessage` / prompt) or its `parts` (`UIMessage`); none for text content. */
function partsOf(message: Record<string, unknown>): readonly unknown[] {
  const parts = Array.isArray(message['content']) ? message['content'] : message['parts'];
  return Array.isArray(parts) ? parts : [];
}

/** An AI SDK decision as rxheal's: a denial without a reason has the empty one. */
function decision(approved: unknown, reason: unknown): Approval | undefined {
  if (approved === true) return { approved: true };
  if (approved === false) return { approved: false, reason: typeof reason === 'string' ? reason : '' };
  return undefined;
}

/**
 * Which tool call each approval request of the conversation is for (`tool-approval-request`
 * parts of its assistant messages; an id no request names is the call's own id, as
 * {@link toAiSdkAgent}'s requests are).
 */
function callsByApproval(messages: readonly Record<string, unknown>[]): Map<string, string> {
  const calls = new Map<string, string>();
  for (const message of messages) {
    if (message['role'] !== 'assistant') continue;
    for (const part of partsOf(message)) {
      if (isObject(part) && part['type'] === 'tool-approval-request' && typeof part['approvalId'] === 'string' && typeof part['toolCallId'] === 'string') {
        calls.set(part['approvalId'], part['toolCallId']);
      }
    }
  }
  return calls;
}

/**
 * The decisions a conversation's last message gives, by tool call id: `resumeAgent`'s
 * `approvals`. Reads what the AI SDK sends back after a pending approval, in any of its forms:
 *
 * - `ModelMessage[]` (`convertToModelMessages`, `response.messages` plus your own tool message),
 *   or a `LanguageModel` prompt: the `tool-approval-response` parts (`{ approvalId, approved,
 *   reason? }`) of the last message, when it is a tool message — each approval id mapped to its
 *   call through the `tool-approval-request` part that asked for it;
 * - `UIMessage[]` (`useChat` after `addToolApprovalResponse`): the tool parts of the last message,
 *   when it is an assistant message, in the state `approval-responded` (`approval: { id,
 *   approved, reason? }`).
 *
 * Only the last message counts: that is where the AI SDK looks too, and the earlier ones answer
 * requests a run already went past (`resumeAgent` refuses an approval of a call that does not wait
 * for one). A denial without a reason gets the empty one. A conversation with none gives `{}`.
 *
 * @example
 * ```ts
 * import { convertToModelMessages } from 'ai';
 * import { resumeAgent } from 'rxheal';
 * import { approvalsFrom } from 'rxheal/ai-sdk';
 *
 * const approvals = approvalsFrom(await convertToModelMessages(uiMessages)); // { call_1: { approved: true } }
 * resumeAgent({ ...config, runId, journal, approvals }).subscribe(console.log);
 * ```
 */
export function approvalsFrom(messages: readonly unknown[]): Record<string, Approval> {
  const approvals: Record<string, Approval> = {};
  const all = messages.filter(isObject);
  const last = all[all.length - 1];
  if (last === undefined) return approvals;
  if (last['role'] === 'tool') {
    const calls = callsByApproval(all);
    for (const part of partsOf(last)) {
      if (!isObject(part) || part['type'] !== 'tool-approval-response' || typeof part['approvalId'] !== 'string') continue;
      const given = decision(part['approved'], part['reason']);
      if (given !== undefined) approvals[calls.get(part['approvalId']) ?? part['approvalId']] = given;
    }
  } else if (last['role'] === 'assistant') {
    for (const part of partsOf(last)) {
      if (!isObject(part) || part['state'] !== 'approval-responded' || typeof part['toolCallId'] !== 'string' || !isObject(part['approval'])) continue;
      const given = decision(part['approval']['approved'], part['approval']['reason']);
      if (given !== undefined) approvals[part['toolCallId']] = given;
    }
  }
  return approvals;
}
