/**
 * A run's events written as AI SDK v3 stream parts, for {@link toAiSdkAgent}: the
 * {@link RunWriter} subscriber (a {@link PartWriter} for text, reasoning and resets; the run's
 * tool calls and results as provider-executed parts, its approval requests, one finish).
 *
 * @module
 */
import type { JSONValue, LanguageModelV3StreamPart, SharedV3ProviderMetadata } from '@ai-sdk/provider';
import type { Observer } from 'rxjs';
import type { AgentEvent, FinishReason, ToolCallEvent, Usage } from '../core/events/events.js';
import { v3Reason, v3ToolCall, v3Usage, type PartWriter } from './partWriter.js';

/** The key of rxheal's own metadata on the parts {@link toAiSdkAgent} writes (`{ runId }`), and on the calls the prompt gives back. */
export const RUN_METADATA = 'rxheal';

/** A tool's result as the JSON a `tool-result` part carries: as is when it is JSON, else its text. */
function jsonResult(result: unknown): NonNullable<JSONValue> {
  if (result === undefined || result === null) return '';
  try {
    const json = JSON.stringify(result) as string | undefined;
    return json === undefined ? String(result) : (JSON.parse(json) as NonNullable<JSONValue>);
  } catch {
    return String(result);
  }
}

/** Two usages added up (a run's turns). */
function plus(a: Usage | undefined, b: Usage | undefined): Usage | undefined {
  if (a === undefined || b === undefined) return a ?? b;
  const add = (x: number | undefined, y: number | undefined): number | undefined => (x === undefined && y === undefined ? undefined : (x ?? 0) + (y ?? 0));
  const cached = add(a.cachedInputTokens, b.cachedInputTokens);
  const written = add(a.cacheWriteTokens, b.cacheWriteTokens);
  const reasoning = add(a.reasoningTokens, b.reasoningTokens);
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    ...(cached === undefined ? {} : { cachedInputTokens: cached }),
    ...(written === undefined ? {} : { cacheWriteTokens: written }),
    ...(reasoning === undefined ? {} : { reasoningTokens: reasoning }),
  };
}

/**
 * Writes a run's live events into an AI SDK stream: text and reasoning deltas (and `reset`) as
 * {@link PartWriter} writes a model's; each tool call as a `tool-call` part the provider executes
 * (`dynamic`: the AI SDK has no definition of it), with `providerMetadata.rxheal.runId`; each
 * `tool-result` / `tool-error` (and an outcome a resume could not know) as a `tool-result` part;
 * each `approval-requested` as a `tool-approval-request` (its approval id the call's id); and at
 * the run's end one `finish`: `'tool-calls'` (raw `'suspended'`) when it suspended, else its last
 * turn's reason, with every turn's usage. A turn's own `finish` ends nothing. Replayed events (a
 * resumed run's journal) were streamed by the call that ran them: left out, except that a call
 * resumed now has its `tool-call` part written again before its result.
 */
export class RunWriter implements Observer<AgentEvent> {
  private reason: FinishReason = 'stop';
  private usage: Usage | undefined = undefined;
  private suspended = false;
  /** Calls read back from the journal, not written yet (a resumed call's part comes again before its result). */
  private readonly replayed = new Map<string, ToolCallEvent>();

  constructor(
    private readonly writer: PartWriter,
    private readonly runId: string,
  ) {}

  next(event: AgentEvent): void {
    if (event.replayed === true) {
      if (event.type === 'tool-call') this.replayed.set(event.id, event);
      return;
    }
    switch (event.type) {
      case 'text-delta':
      case 'reasoning-delta':
      case 'reasoning-end':
      case 'reset':
        return this.writer.next(event);
      case 'tool-call':
        return this.call(event);
      case 'finish':
        this.reason = event.reason;
        this.usage = plus(this.usage, event.usage);
        return;
      case 'tool-result':
        return this.result(event.id, event.name, jsonResult(event.result), false);
      case 'tool-error':
        return this.result(event.id, event.name, event.error, true);
      case 'tool-outcome-unknown':
        return this.result(event.callId, event.tool, 'its outcome is unknown: the run was cut while it ran, and it was not run again', true);
      case 'approval-requested':
        return this.writer.write({ type: 'tool-approval-request', approvalId: event.callId, toolCallId: event.callId });
      case 'suspended':
        this.suspended = true;
        return;
      default:
        // messages, validation, the healing's events, call starts and ends: not parts of an AI SDK stream
        return;
    }
  }

  error(error: unknown): void {
    this.writer.fail(error);
  }

  complete(): void {
    this.writer.end({
      type: 'finish',
      finishReason: this.suspended ? v3Reason('tool-calls', 'suspended') : v3Reason(this.reason),
      usage: v3Usage(this.usage),
      providerMetadata: { [RUN_METADATA]: { runId: this.runId } },
    });
  }

  private call(event: ToolCallEvent): void {
    const providerMetadata = { ...(event.providerMetadata as SharedV3ProviderMetadata | undefined), [RUN_METADATA]: { runId: this.runId } };
    const part: LanguageModelV3StreamPart = { ...v3ToolCall(event), providerExecuted: true, dynamic: true, providerMetadata };
    this.writer.write(part);
  }

  private result(toolCallId: string, toolName: string, result: NonNullable<JSONValue>, isError: boolean): void {
    const call = this.replayed.get(toolCallId);
    if (call !== undefined) {
      this.replayed.delete(toolCallId);
      this.call(call);
    }
    const metadata = { [RUN_METADATA]: { runId: this.runId } };
    this.writer.write(
      isError
        ? { type: 'tool-result', toolCallId, toolName, result, isError, dynamic: true, providerMetadata: metadata }
        : { type: 'tool-result', toolCallId, toolName, result, dynamic: true, providerMetadata: metadata },
    );
  }
}
