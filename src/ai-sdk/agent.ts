/**
 * {@link toAiSdkAgent}: a journaled rxheal run as an AI SDK `LanguageModelV3` whose tools the run
 * executes — to the AI SDK, provider-executed tools — so a tool that needs approval pauses the
 * run the AI SDK way (a `tool-approval-request` part, the stream finished), and the conversation
 * that comes back with `tool-approval-response` parts resumes it (`resumeAgent`).
 *
 * @module
 */
import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV3Prompt, SharedV3Warning } from '@ai-sdk/provider';
import type { Observable } from 'rxjs';
import { InvalidOptionError } from '../core/errors/errors.js';
import { Func, NonEmptyString, validateOptions } from '../core/errors/options.js';
import type { AgentEvent } from '../core/events/events.js';
import type { JournalStore } from '../core/journal/journal.js';
import { subscribeWithin } from '../core/rx/operate.js';
import type { AgentConfig, Approval } from '../sources/agentConfig.js';
import { resumeAgent } from '../sources/resumeAgent.js';
import { runAgent } from '../sources/runAgent.js';
import { isObject } from '../adapters/common.js';
import { approvalsFrom } from './approvals.js';
import { collectParts } from './collect.js';
import { PartWriter, partStream } from './partWriter.js';
import { RunWriter, RUN_METADATA } from './runWriter.js';
import { settingsWarnings } from './settings.js';
import { fromPrompt, settingsOf } from './to.js';

/**
 * What {@link toAiSdkAgent} runs: an agent's configuration (`runAgent`'s) without the
 * conversation, which each call's prompt gives, nor the run id, which each new run gets; with the
 * journal a run that waits for approval needs.
 *
 * @example
 * ```ts
 * const config: AiSdkAgentConfig = { model, tools: [bookFlight], journal: fileJournal({ dir: './runs' }) };
 * ```
 */
export type AiSdkAgentConfig = Omit<AgentConfig, 'messages' | 'runId' | 'journal'> & { readonly journal: JournalStore };

/**
 * Options of {@link toAiSdkAgent}.
 *
 * @example
 * ```ts
 * const options: ToAiSdkAgentOptions = { modelId: 'travel-agent', newRunId: () => `chat-${crypto.randomUUID()}` };
 * ```
 */
export interface ToAiSdkAgentOptions {
  /** The `provider` the AI SDK reports. Defaults to `'rxheal'`. */
  readonly provider?: string;
  /** The `modelId` the AI SDK reports. Defaults to the agent's model's `id`. */
  readonly modelId?: string;
  /** The id of each new run in the journal (1 to 100 letters, digits, `_`, `-` or `.`). Defaults to a random UUID. */
  readonly newRunId?: () => string;
}

const agentProps = { provider: NonEmptyString, modelId: NonEmptyString, newRunId: Func };

/** The run a prompt answers approvals of: its id (from its tool calls' metadata), the decisions, and the conversation it started from. */
interface Resumption {
  readonly runId: string;
  readonly approvals: Record<string, Approval>;
  /** The prompt up to the run's first answer: what the run was started with. */
  readonly prompt: LanguageModelV3Prompt;
}

/** The run id a tool call part of ours carries (`providerOptions.rxheal.runId`), if it is one of ours. */
function runIdOf(part: unknown): string | undefined {
  if (!isObject(part) || part['type'] !== 'tool-call' || !isObject(part['providerOptions'])) return undefined;
  const ours = part['providerOptions'][RUN_METADATA];
  return isObject(ours) && typeof ours['runId'] === 'string' ? ours['runId'] : undefined;
}

/**
 * The run the prompt's approvals are for, or `undefined` when it gives none (a new run). Its
 * conversation is the prompt before the first assistant message holding one of its calls.
 */
function resumptionOf(prompt: LanguageModelV3Prompt): Resumption | undefined {
  const approvals = approvalsFrom(prompt);
  const ids = Object.keys(approvals);
  if (ids.length === 0) return undefined;
  let runId: string | undefined;
  prompt.forEach((message) => {
    if (message.role !== 'assistant') return;
    for (const part of message.content) if (part.type === 'tool-call' && ids.includes(part.toolCallId)) runId ??= runIdOf(part);
  });
  if (runId === undefined) {
    throw new InvalidOptionError(
      'toAiSdkAgent',
      'prompt',
      ids,
      'approvals of tool calls an rxheal run asked about (the assistant message with the calls, as the AI SDK sends it back)',
    );
  }
  const start = prompt.findIndex((m) => m.role === 'assistant' && m.content.some((part) => runIdOf(part) === runId));
  return { runId, approvals, prompt: prompt.slice(0, start) };
}

/**
 * An AI SDK `LanguageModelV3` over a journaled rxheal agent: each call runs the agent
 * (`runAgent`) on the call's prompt, its tools executed by the run — to the AI SDK, tools the
 * provider executes — with everything a run heals (retries, fallbacks, breakers, budgets,
 * journaling), and streams it: text and reasoning of every turn, each tool call as a `tool-call`
 * part with `providerExecuted: true` and `dynamic: true` (the AI SDK has no definition of the
 * run's tools; the call's metadata `providerMetadata.rxheal.runId` names its run), each result
 * or error as a `tool-result` part (`isError` for an error), and one `finish` at the end (the
 * last turn's reason, the usage of every turn, `providerMetadata.rxheal.runId`).
 *
 * **Approvals** (a tool's `needsApproval`): the run's `approval-requested` becomes a
 * `tool-approval-request` part (`approvalId`: the call's id) and its suspension ends the stream
 * with `finishReason: 'tool-calls'` (raw `'suspended'`) — what the AI SDK does for a
 * provider-executed tool waiting for approval: `streamText`'s `fullStream` shows
 * `{ type: 'tool-approval-request', approvalId, toolCall }`, its UI message stream a
 * `tool-approval-request` chunk (a `useChat` tool part in the state `approval-requested`,
 * answered with `addToolApprovalResponse`). The next call, whose prompt ends with the
 * `tool-approval-response` parts (`response.messages` plus a tool message of them, or
 * `convertToModelMessages` of the answered UI messages), resumes that run (`resumeAgent` with
 * {@link approvalsFrom}'s approvals, the conversation it started from): approved calls run,
 * denied ones tell the model why, and the stream goes on from there — what the first call
 * already streamed is not streamed again (the journal's replayed events are left out; a resumed
 * call's `tool-call` part comes again before its result). Approvals of calls no rxheal run asked
 * about reject the call (`InvalidOptionError`).
 *
 * The prompt becomes the run's conversation as {@link toAiSdk} reads it (text, tool calls and
 * results; an assistant message's provider-executed parts — an earlier run's tool calls — are
 * left out). The call's tools and settings are not the run's (its model and tools are its
 * own): each is reported as an `unsupported` warning. A reset after something was delivered,
 * or the run's error, ends the stream with an `error` part, as in {@link toAiSdk}; aborting the
 * call's signal, or cancelling the stream, unsubscribes the run (its lease released, the
 * journal as far as it got). `doGenerate` collects the same parts into content.
 *
 * @example
 * ```ts
 * import { streamText } from 'ai';
 * import { defineTool } from 'rxheal';
 * import { fileJournal } from 'rxheal/durable';
 * import { toAiSdkAgent } from 'rxheal/ai-sdk';
 *
 * const agent = toAiSdkAgent({ model, tools: [bookFlight], journal: fileJournal({ dir: './runs' }) });
 * const first = streamText({ model: agent, prompt: 'Book LH 400', maxRetries: 0 });
 * // … fullStream: { type: 'tool-approval-request', approvalId: 'call_1', … }; then, with the answer:
 * const messages = [...firstMessages, ...(await first.response).messages];
 * messages.push({ role: 'tool', content: [{ type: 'tool-approval-response', approvalId: 'call_1', approved: true, providerExecuted: true }] });
 * const second = streamText({ model: agent, messages, maxRetries: 0 }); // the run resumes: booked
 * ```
 * @throws {InvalidOptionError} at once, without a journal, or for an invalid option; the run's own
 * checks (`runAgent`'s) reject the call.
 */
export function toAiSdkAgent(config: AiSdkAgentConfig, options?: ToAiSdkAgentOptions): LanguageModelV3 {
  if (!isObject(config) || !isObject(config.journal)) {
    throw new InvalidOptionError('toAiSdkAgent', 'config.journal', isObject(config) ? config.journal : config, 'a JournalStore (a paused run waits in it)');
  }
  const o = validateOptions('toAiSdkAgent', agentProps, options);
  const newRunId = o.newRunId ?? ((): string => globalThis.crypto.randomUUID());
  const modelId = o.modelId ?? (isObject(config.model) && typeof config.model.id === 'string' ? config.model.id : 'agent');

  /** The run a call starts or resumes, its id, and the call's warnings. */
  const runOf = (call: LanguageModelV3CallOptions): { runId: string; run$: Observable<AgentEvent>; warnings: SharedV3Warning[] } => {
    const warnings: SharedV3Warning[] = [];
    for (const tool of call.tools ?? []) {
      warnings.push({ type: 'unsupported', feature: `tool ${tool.name}`, details: 'an rxheal run calls its own tools (the agent configuration)' });
    }
    warnings.push(...settingsWarnings(settingsOf(call), [modelId]));
    const resumption = resumptionOf(call.prompt);
    if (resumption !== undefined) {
      const messages = fromPrompt(resumption.prompt, warnings);
      return { runId: resumption.runId, run$: resumeAgent({ ...config, messages, runId: resumption.runId, approvals: resumption.approvals }), warnings };
    }
    const runId = newRunId();
    return { runId, run$: runAgent({ ...config, messages: fromPrompt(call.prompt, warnings), runId }), warnings };
  };

  const model: LanguageModelV3 = {
    specificationVersion: 'v3',
    provider: o.provider ?? 'rxheal',
    modelId,
    supportedUrls: {},

    // async: a prompt or configuration the run refuses rejects, it doesn't throw
    async doStream(call) {
      const { runId, run$, warnings } = runOf(call);
      const stream = partStream(call.abortSignal, warnings, (controller, lifetime) =>
        subscribeWithin(lifetime, run$, new RunWriter(new PartWriter(controller, modelId, lifetime), runId)),
      );
      return { stream, request: { body: { runId } } };
    },

    async doGenerate(call) {
      const { stream, request } = await model.doStream(call);
      return { ...(await collectParts(stream, modelId)), request };
    },
  };
  return model;
}
