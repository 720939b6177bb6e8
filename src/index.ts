export { retryWithBackoff } from './operators/retryWithBackoff.js';
export type { RetryInfo, RetryWithBackoffOptions, RetryWithBackoffBaseOptions } from './operators/retryWithBackoff.js';
export { circuitBreak } from './operators/circuitBreak.js';
export { callPolicy } from './operators/callPolicy.js';
export type { CallPolicy, CallPolicyOptions } from './operators/callPolicy.js';
export { CircuitBreaker } from './core/breaker/CircuitBreaker.js';
export { CircuitBreakerRegistry } from './core/breaker/registry.js';
// persisting breakers: functions of their own, so a plain circuitBreak bundles none of it
export { restoreBreaker, restoreRegistry, snapshotBreaker, snapshotRegistry } from './core/breaker/persist.js';
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
// fleets: breaker verdicts and rate limits shared across processes (Redis stores in rxheal/redis)
export { MemoryBreakerStore } from './core/fleet/fleetStore.js';
export type { MemoryBreakerStoreOptions } from './core/fleet/fleetStore.js';
export type { BreakerStore, FleetReason, FleetState, FleetVerdict, ProbeLease, Quorum } from './core/breaker/fleetSeam.js';
export type { FleetOptions, QuorumOptions } from './core/breaker/fleetSeam.js';
// a BreakerStore of your own carries the fleet's node logic: `readonly [FLEET_NODE] = fleetNode`
export { fleetNode } from './core/fleet/fleet.js';
export { FLEET_NODE } from './core/breaker/fleetSeam.js';
export type { FleetBreaker, FleetHook, FleetNode } from './core/breaker/fleetSeam.js';
export type { GuardBreaker } from './core/fleet/storeGuard.js';
export type { Watchable } from './core/circuit/permit.js';
export { RateLimiter } from './core/rate-limit/rateLimit.js';
export type { RateLimiterOptions, RateLimitReservation } from './core/rate-limit/rateLimit.js';
export { MemoryRateLimitStore } from './core/rate-limit/rateLimitStore.js';
export type {
  MemoryRateLimitStoreOptions,
  RateLimit,
  RateLimitAdjustment,
  RateLimitGrant,
  RateLimitRequest,
  RateLimitStore,
} from './core/rate-limit/rateLimitStore.js';
export { rateLimit } from './operators/rateLimit.js';
export type { RateLimitOptions } from './operators/rateLimit.js';
export { RateLimitExceededError } from './core/errors/errors.js';
export { classifyError, createClassifier, isServiceFailure } from './core/errors/classify.js';
export { impliedStatus, parseRetryAfter, readHeader } from './core/errors/readError.js';
export type {
  ClassificationRule,
  ClassifierOptions,
  ClassifyContext,
  ErrorCategory,
  ErrorClassification,
  ErrorClassifier,
  RecoveryStrategy,
} from './core/errors/classify.js';
export { backoffDelay, baseDelay } from './core/rx/backoff.js';
export type { BackoffPolicy, Jitter } from './core/rx/backoff.js';
export {
  AllFallbacksFailedError,
  BudgetExceededError,
  CircuitOpenError,
  HttpError,
  IncompleteStreamError,
  InvalidOptionError,
  MalformedStreamError,
  RetriesExhaustedError,
  TotalTimeoutError,
} from './core/errors/errors.js';
export type { GiveUpReason, HeadersLike } from './core/errors/errors.js';
export { JournalCorruptError, RunLockedError } from './core/journal/errors.js';
export type { RunLockReason } from './core/journal/errors.js';
export type { JournalClaim, JournalData, JournalEntry, JournalSession, JournalStore } from './core/journal/journal.js';
export { ToolError } from './core/errors/errors.js';
export type { ToolPhase } from './core/errors/errors.js';
export { HealHub } from './core/hub/hub.js';
export { sanitizeText, errorText } from './core/errors/sanitize.js';
export type * from './core/events/events.js';
// the union codecs; each event's and message's own codec is in rxheal/events
export { AgentEventCodec, HealEventCodec, MessageCodec, ModelEventCodec, ToolCallCodec, TurnEventCodec, UsageCodec } from './core/events/events.js';
export { reflectOnError, shouldReflectByDefault, Reflection, DEFAULT_REFLECTION_TEMPLATE, DEFAULT_EXHAUSTED_TEMPLATE } from './operators/reflectOnError.js';
export type { ReflectOnErrorOptions } from './operators/reflectOnError.js';
export { validateOutput } from './operators/validateOutput.js';
export type { OutputCheck, OutputValidator, ValidateOutputOptions } from './operators/validateOutput.js';
export type { CircuitBreakOptions } from './operators/circuitBreak.js';
export { abortable } from './core/model/abortable.js';
export type { AbortContext } from './core/model/abortable.js';
export { streamModel, fromAsyncIterable, eachValueFrom } from './core/model/model.js';
export type { BudgetMeter, Model, ModelCallContext, ModelContext, ModelRequest, ToolChoice, ToolSpec } from './core/model/model.js';
export { defineTool, callTool, toJsonSchema } from './sources/tool.js';
export type { Tool, ToolContext, ToolDefinition, CallToolOptions, JsonSchema } from './sources/tool.js';
export { runAgent } from './sources/runAgent.js';
export type { AgentConfig, AnyTool, Budget, CapabilitySource, PipelineContext } from './sources/runAgent.js';
export { RunScope } from './core/rx/runScope.js';
export { fallbackTo } from './operators/fallbackTo.js';
export type { FallbackAlternative, FallbackFactory, FallbackInfo, FallbackToBaseOptions, FallbackToOptions, NamedFallback } from './operators/fallbackTo.js';
export { fallbackModel, DEFAULT_CONTINUE_INSTRUCTION } from './sources/fallbackModel.js';
export type { FallbackModelOptions, PerModelContext } from './sources/fallbackModel.js';
export { degradeAfter } from './operators/degradeAfter.js';
export type { DegradeAfterOptions, DegradeDeadline, DegradeReason, Degraded } from './operators/degradeAfter.js';
export { CapabilityRegistry } from './core/capabilities/CapabilityRegistry.js';
export type { CapabilityEvent, CapabilityRegistryOptions } from './core/capabilities/CapabilityRegistry.js';
export { formatLogLine, logEvents, logRecord, tapLogs } from './observe/logger.js';
export type { LogEventsOptions, LoggerLike, LogLevel, LogRecord, LogValue } from './observe/logger.js';
export { summarize, summarizeEvents } from './observe/summarize.js';
export type { CapabilitySummary, CircuitSummary, Counts, ResilienceSummary, SummarizeOptions, TargetSummary, TimedEvent } from './observe/summarize.js';
export { openAICompatibleModel } from './providers/openai.js';
export type { OpenAICompatibleModelOptions } from './providers/openai.js';
export { openAIResponsesModel } from './providers/responses.js';
export type { OpenAIResponsesModelOptions } from './providers/responses.js';
export type { ResponsesResumeOptions } from './providers/responsesResume.js';
export { anthropicModel } from './providers/anthropic.js';
export type { AnthropicModelOptions } from './providers/anthropic.js';
// the protocol layer (SSE parsing, decoders, request bodies) is rxheal/providers
// observed latency: trackers on HdrHistogram, and deadlines derived from their quantiles
export { LatencyTracker } from './core/latency/tracker.js';
// LatencyDeadline is made by tracker.deadline(): its type alone keeps the root under 80 runtime exports
export type { LatencyDeadline, DerivedDeadlineOptions, LatencyKind, LatencyQuantiles, LatencySnapshot, LatencyTrackerOptions } from './core/latency/tracker.js';
export type { DeadlineSource } from './core/latency/deadline.js';
export { LatencyRegistry } from './core/latency/registry.js';
// bulkheads: so many calls of a model or tool at once, a bounded queue, a typed refusal
export { Bulkhead, BulkheadRegistry } from './core/bulkhead/bulkhead.js';
export type { BulkheadEntrant, BulkheadOptions } from './core/bulkhead/bulkhead.js';
export { bulkhead } from './operators/bulkhead.js';
export { BulkheadRejectedError } from './core/errors/errors.js';
export type { BulkheadRejection } from './core/errors/errors.js';
// hedging the slow tail: a second attempt when the first is slow to deliver, within a budget
export { hedge } from './operators/hedge.js';
export type { HedgeAttempt, HedgeOptions } from './operators/hedge.js';
export { HedgeBudget } from './operators/hedgeBudget.js';
export type { HedgeBudgetOptions } from './operators/hedgeBudget.js';
