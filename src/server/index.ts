/**
 * `rxheal/server`: a local LLM provider for demos and integration tests (Node only). See
 * docs/local-provider.md.
 *
 * @example
 * ```ts
 * import { startLocalProvider } from 'rxheal/server';
 * const server = await startLocalProvider({ name: 'primary', faults: [{ kind: 'status', status: 429, retryAfter: 1, times: 1 }] });
 * ```
 *
 * @module
 */
export { startLocalProvider, FaultController, validateFault, DEFAULT_ALLOWED_ORIGINS } from './localProvider.js';
export type {
  ActiveFault,
  BadToolArgsFault,
  BlockedFault,
  DownFault,
  Fault,
  FaultBase,
  FaultKind,
  LocalPromptCacheOptions,
  LocalProvider,
  LocalProviderOptions,
  MalformedFault,
  ProviderActivity,
  Protocol,
  RecordedRequest,
  ResetFault,
  SlowFirstByteFault,
  StallFault,
  StatusFault,
  StreamErrorFault,
  VerboseFault,
} from './localProvider.js';
export { scriptedAssistant, tokenize, cityOf, RIVER_STORY } from './assistant.js';
export { thinkingSignature } from './protocols.js';
export type { Assistant, AssistantRequest, AssistantTool, AssistantToolCall, AssistantTurn } from './assistant.js';
