/**
 * The classifier's words for failures ({@link ErrorCategory}) and its table of HTTP statuses, alone:
 * what `classifyError` calls each status it knows by number. A module of its own so that code reading statuses back (rxheal/chaos's incident
 * recorder) takes the table without the classifier.
 */
/** What kind of failure an error is. */
export type ErrorCategory =
  | 'cancelled'
  | 'programming'
  | 'circuit_open'
  // our own rate limiter refused the call before sending it (RateLimitExceededError)
  | 'throttled'
  // a bulkhead had no slot (or queue place) for the call (BulkheadRejectedError)
  | 'bulkhead_full'
  | 'budget_exceeded'
  | 'request_timeout'
  | 'conflict'
  | 'rate_limit'
  | 'server_error'
  | 'bad_gateway'
  | 'service_unavailable'
  | 'gateway_timeout'
  | 'bad_request'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'validation_error'
  | 'client_error'
  | 'timeout'
  | 'connection'
  | 'transient'
  | 'unknown';

/** The category of each HTTP status the classifier knows by number (others: `client_error` / `server_error`). */
export const HTTP_CATEGORIES: Readonly<Record<number, ErrorCategory>> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  408: 'request_timeout',
  409: 'conflict',
  422: 'validation_error',
  429: 'rate_limit',
  500: 'server_error',
  502: 'bad_gateway',
  503: 'service_unavailable',
  504: 'gateway_timeout',
  // Anthropic's "overloaded" status
  529: 'service_unavailable',
};
