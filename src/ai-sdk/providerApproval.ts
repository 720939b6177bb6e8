/**
 * {@link providerToolApproval}: the rxheal tool that stands for a tool an AI SDK provider runs
 * itself and asks approval for (hosted MCP with `require_approval`), so a run decides the
 * provider's request as its own calls' — journaled, suspended, `resumeAgent({ approvals })`.
 *
 * @module
 */
import * as t from 'io-ts';
import { InvalidOptionError } from '../core/errors/errors.js';
import { check, validateOptions } from '../core/errors/options.js';
import { defineTool, type Tool, type ToolContext } from '../sources/tool.js';
import { isObject } from '../adapters/common.js';

/** Marks the schema of a {@link providerToolApproval} tool: `fromAiSdk` sends the provider no function tool for it. */
export const PROVIDER_TOOL = Symbol.for('rxheal.ai-sdk.providerTool');

/** Whether a tool's schema is a {@link providerToolApproval} tool's (the provider has the tool: it is not sent as a function tool). */
export function isProviderTool(parameters: unknown): boolean {
  return isObject(parameters) && (parameters as { [PROVIDER_TOOL]?: unknown })[PROVIDER_TOOL] === true;
}

const approvalProps = {
  needsApproval: check(
    'a boolean or a function (args, context) => boolean',
    (u): u is boolean | ((...args: never[]) => unknown) => typeof u === 'boolean' || typeof u === 'function',
  ),
  description: check('a string', (u): u is string => typeof u === 'string'),
};

/**
 * Options of {@link providerToolApproval}.
 *
 * @example
 * ```ts
 * const options: ProviderToolApprovalOptions = { needsApproval: (args) => (args as { max_clicks?: number }).max_clicks !== 1 };
 * ```
 */
export interface ProviderToolApprovalOptions {
  /** Whether a call waits for a person (the provider's arguments, decoded as JSON): `true` (the default), or a predicate. `false` approves every call at once. */
  readonly needsApproval?: boolean | ((args: unknown, context: ToolContext) => boolean);
  /** What the run's events and the journal call it. Defaults to `'approval of <name>, a tool the provider runs'`. */
  readonly description?: string;
}

/**
 * An rxheal tool for a tool an AI SDK provider runs itself and asks approval for — hosted MCP
 * through `@ai-sdk/openai`'s Responses API with `require_approval`, whose calls `fromAiSdk` reads
 * as `tool-call` parts the provider executes and a `tool-approval-request`. With this tool in the
 * run (its `name` the provider's tool name, as the AI SDK gives it: `mcp.<name>` for hosted MCP),
 * the provider's request is a call of the run's turn: it waits for approval
 * (`approval-requested`, the run journaled and `suspended`; `needsApproval`) and
 * `resumeAgent({ approvals })` decides it. The answer goes back as the provider expects it, in the
 * next request: an approved call as `tool-approval-response` `{ approved: true }` (the provider
 * then runs the tool, and its result and answer stream in), a denied one as `{ approved: false,
 * reason }`. The tool runs nothing itself, and the provider gets no function tool for it.
 *
 * A provider's request with no such tool in the run is denied (the run's unknown-tool error is
 * the reason the provider gets): nobody was there to ask.
 *
 * @example
 * ```ts
 * import { openai } from '@ai-sdk/openai';
 * import { resumeAgent, runAgent } from 'rxheal';
 * import { fromAiSdk, providerToolApproval } from 'rxheal/ai-sdk';
 *
 * const model = fromAiSdk(openai.responses('gpt-5-mini'), {
 *   settings: { tools: [openai.tools.mcp({ serverLabel: 'zip1', serverUrl: 'https://zip1.io/mcp', requireApproval: 'always' })] },
 * });
 * const config = { model, tools: [providerToolApproval('mcp.create_short_url')], messages, runId: 'link-1', journal };
 * runAgent(config).subscribe(console.log); // … approval-requested, suspended
 * resumeAgent({ ...config, approvals: { [callId]: { approved: true } } }).subscribe(console.log); // the provider runs it
 * ```
 * @throws {InvalidOptionError} at once, for an empty name or an invalid option.
 */
export function providerToolApproval(name: string, options?: ProviderToolApprovalOptions): Tool<unknown, string> {
  if (typeof name !== 'string' || name === '')
    throw new InvalidOptionError('providerToolApproval', 'name', name, "the provider's tool name (a non-empty string)");
  validateOptions('providerToolApproval', approvalProps, options);
  const tool = defineTool<unknown, string>({
    name,
    description: options?.description ?? `approval of ${name}, a tool the provider runs`,
    args: t.unknown,
    idempotent: true,
    needsApproval: options?.needsApproval ?? true,
    // the provider runs it once approved: here, the approval is the whole effect
    execute: () => ['approved'],
  });
  const parameters = { type: 'object' as const };
  Object.defineProperty(parameters, PROVIDER_TOOL, { value: true });
  return { ...tool, parameters };
}
