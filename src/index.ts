export { retryWithBackoff } from './operators/retryWithBackoff.js';
export type { RetryInfo, RetryWithBackoffOptions, RetryWithBackoffBaseOptions } from './operators/retryWithBackoff.js';
export { circuitBreak } from './operators/circuitBreak.js';
export { CircuitBreaker, CircuitBreakerRegistry } from './core/CircuitBreaker.js';
export type {
  CircuitBreakerOptions,
  CircuitEvent,
  CircuitPermit,
  CircuitSnapshot,
  CircuitState,
  FailureRateWindow,
  TransitionReason,
} from './core/CircuitBreaker.js';
export { classifyError, createClassifier, isServiceFailure, parseRetryAfter, readHeader } from './core/classify.js';
export type {
  ClassificationRule,
  ClassifierOptions,
  ClassifyContext,
  ErrorCategory,
  ErrorClassification,
  ErrorClassifier,
  RecoveryStrategy,
} from './core/classify.js';
export { backoffDelay, baseDelay } from './core/backoff.js';
export type { BackoffPolicy, Jitter } from './core/backoff.js';
export {
  AllFallbacksFailedError,
  BudgetExceededError,
  CircuitOpenError,
  HttpError,
  InvalidOptionError,
  RetriesExhaustedError,
  TotalTimeoutError,
} from './core/errors.js';
export type { GiveUpReason, HeadersLike } from './core/errors.js';
