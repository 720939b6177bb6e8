/**
 * `rxheal`: the learnable core — the operators, the circuit breaker and its registry, the errors
 * and the classifier, the agent loop (`runAgent`, `fallbackModel`, `defineTool`), the models over
 * `fetch`, and what the operators take (hubs, registries, budgets). Everything else has a
 * subpath of its own: the fleet's stores and breaker snapshots in `rxheal/fleet`, the event codecs
 * and log helpers in `rxheal/events`, the protocol layer and the header and error helpers in
 * `rxheal/providers`, fakes in `rxheal/testing`. CHANGELOG.md says where each moved name went.
 *
 * @example
 * ```ts
 * import { circuitBreak, retryWithBackoff } from 'rxheal';
 * callWeather$.pipe(retryWithBackoff({ maxRetries: 3 }), circuitBreak({ failureThreshold: 5 }));
 * ```
 *
 * @module
 */

// the operators
export { retryWithBackoff } from './operators/retryWithBackoff.js';
export type { RetryInfo, RetryWithBackoffOptions, RetryWithBackoffBaseOptions } from './operators/retryWithBackoff.js';
export { circuitBreak } from './operators/circuitBreak.js';
export type { CircuitBreakOptions } from './operators/circuitBreak.js';
export { callPolicy } from './operators/callPolicy.js';
export type { CallPolicy, CallPolicyOptions } from './operators/callPolicy.js';
export { reflectOnError, Reflection } from './operators/reflectOnError.js';
export type { ReflectOnErrorOptions } from './operators/reflectOnError.js';
export { validateOutput } from './operators/validateOutput.js';
export type { OutputCheck, OutputValidator, ValidateOutputOptions } from './operators/validateOutput.js';
export { fallbackTo } from './operators/fallbackTo.js';
export type { FallbackAlternative, FallbackFactory, FallbackInfo, FallbackToBaseOptions, FallbackToOptions, NamedFallback } from './operators/fallbackTo.js';
export { degradeAfter } from './operators/degradeAfter.js';
export type { DegradeAfterOptions, DegradeDeadline, DegradeReason, Degraded } from './operators/degradeAfter.js';
export { rateLimit } from './operators/rateLimit.js';
export type { RateLimitOptions } from './operators/rateLimit.js';
export { bulkhead } from './operators/bulkhead.js';
export { hedge } from './operators/hedge.js';
export type { HedgeAttempt, HedgeOptions } from './operators/hedge.js';

// what the operators take: breakers, the hub they report to, capabilities, limits, bulkheads, latency, the hedge budget
export { CircuitBreaker } from './core/breaker/CircuitBreaker.js';
export { CircuitBreakerRegistry } from './core/breaker/registry.js';
export type {
  CircuitBreakerOptions,
  CircuitEvent,
  CircuitPermit,
  CircuitSnapshot,
  CircuitSnapshotV1,
  CircuitSnapshotWindow,
  CircuitState,
  FailureRateWindow,
  TransitionReason,
} from './core/breaker/CircuitBreaker.js';
// a breaker's `fleet` option and a limiter's `store` take rxheal/fleet's stores: their types (FleetOptions, BreakerStore, RateLimitStore) are there
export type { Watchable } from './core/circuit/permit.js';
export { HealHub } from './core/hub/hub.js';
export { CapabilityRegistry } from './core/capabilities/CapabilityRegistry.js';
export type { CapabilityEvent, CapabilityRegistryOptions } from './core/capabilities/CapabilityRegistry.js';
export { RateLimiter } from './core/rate-limit/rateLimit.js';
export type { RateLimiterOptions, RateLimitReservation } from './core/rate-limit/rateLimit.js';
// the seam runAgent's spend limits follow; SpendLimiter and its stores are rxheal/fleet's (the root holds at most 50 values)
export type { SpendContext, SpendGate, SpendHold } from './core/money/spendGate.js';
export { Bulkhead, BulkheadRegistry } from './core/bulkhead/bulkhead.js';
export type { BulkheadEntrant, BulkheadOptions } from './core/bulkhead/bulkhead.js';
export { LatencyTracker } from './core/latency/tracker.js';
export type { LatencyDeadline, DerivedDeadlineOptions, LatencyKind, LatencyQuantiles, LatencySnapshot, LatencyTrackerOptions } from './core/latency/tracker.js';
export type { DeadlineSource } from './core/latency/deadline.js';
export { LatencyRegistry } from './core/latency/registry.js';
export { HedgeBudget } from './operators/hedgeBudget.js';
export type { HedgeBudgetOptions } from './operators/hedgeBudget.js';
export type { BackoffPolicy, Jitter } from './core/rx/backoff.js';

// the errors, and the classifier that reads any thrown value
export {
  AllFallbacksFailedError,
  BudgetExceededError,
  BulkheadRejectedError,
  CircuitOpenError,
  HttpError,
  IncompleteStreamError,
  InvalidOptionError,
  MalformedStreamError,
  RateLimitExceededError,
  RetriesExhaustedError,
  ToolError,
  TotalTimeoutError,
} from './core/errors/errors.js';
export type { BulkheadRejection, GiveUpReason, HeadersLike, ToolPhase } from './core/errors/errors.js';
export { JournalCorruptError, JournalMismatchError, RunLockedError, ToolOutcomeUnknownError } from './core/journal/errors.js';
export type { JournalChange, RunLockReason } from './core/journal/errors.js';
export type { JournalClaim, JournalData, JournalEntry, JournalSession, JournalStore } from './core/journal/journal.js';
export type { StepJournal, StepRunner } from './sources/agentConfig.js';
// the effect ledger's values (effectLedger, NotAppliedError, idempotencyHeaders) are rxheal/durable's: the root's 50 are taken
export type { EffectLedger, EffectLedgerOptions, EffectState } from './sources/effectLedger.js';
export { classifyError, createClassifier } from './core/errors/classify.js';
export type {
  ClassificationRule,
  ClassifierOptions,
  ClassifyContext,
  ErrorCategory,
  ErrorClassification,
  ErrorClassifier,
  RecoveryStrategy,
} from './core/errors/classify.js';

// the agent: models, tools, the loop
export { streamModel } from './core/model/model.js';
export type { BudgetMeter, Model, ModelCallContext, ModelCheckpoint, ModelContext, ModelRequest, MoneyLeft, ToolChoice, ToolSpec } from './core/model/model.js';
export type { ModelPrice, Prices } from './core/money/prices.js';
export type { AttemptSpend } from './core/money/meter.js';
export type { AbortContext } from './core/model/abortable.js';
export { defineTool, callTool } from './sources/tool.js';
export type { Tool, ToolContext, ToolDefinition, CallToolOptions, CheckpointHolder, JsonSchema, Verified } from './sources/tool.js';
export { runAgent } from './sources/runAgent.js';
export type { AgentConfig, AnyTool, Approval, Budget, CapabilitySource, PipelineContext, ResumeConfig } from './sources/runAgent.js';
export { resumeAgent } from './sources/resumeAgent.js';
export type { RunScope } from './core/rx/runScope.js';
export { fallbackModel } from './sources/fallbackModel.js';
export type { FallbackModelOptions, PerModelContext } from './sources/fallbackModel.js';
// the event model's types (their io-ts codecs, as values, are rxheal/events')
export type * from './core/events/events.js';

// the models over fetch (their protocol layer is rxheal/providers)
export { openAICompatibleModel } from './providers/openai.js';
export type { OpenAICompatibleModelOptions } from './providers/openai.js';
export { openAIResponsesModel } from './providers/responses.js';
export type { OpenAIResponsesModelOptions, ResponsesPromptCache } from './providers/responses.js';
export type { ResponsesResumeOptions } from './providers/responsesResume.js';
export { anthropicModel } from './providers/anthropic.js';
export type { AnthropicModelOptions, AnthropicCacheOptions, AnthropicFallbacks } from './providers/anthropic.js';

// reading a run: logs and the summary of what healed (log records and formatting: rxheal/events)
export { logEvents } from './observe/logger.js';
export type { LogEventsOptions, LoggerLike, LogLevel, LogRecord, LogValue } from './observe/logger.js';
export { summarize } from './observe/summarize.js';
export type { CapabilitySummary, CircuitSummary, Counts, ResilienceSummary, SummarizeOptions, TargetSummary, TimedEvent } from './observe/summarize.js';
