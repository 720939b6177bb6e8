/**
 * {@link underLedger}: where a run's tool execution meets its effect ledger (`effects`).
 *
 * @module
 */
import type { Observable } from 'rxjs';
import type { AgentConfig } from './agentConfig.js';
import type { GuardedCall } from './effectLedger.js';

/**
 * One execution of a tool under the run's effect ledger (`effects`), or as it is: without a
 * ledger, and for a tool declared `idempotent: true` (no ledger round trip for those).
 *
 * @example
 * ```ts
 * const guarded$ = underLedger(config, { key, runId, tool, call, hub }, execute$);
 * ```
 */
export function underLedger(config: AgentConfig, call: Omit<GuardedCall, 'onUnknownOutcome'>, execute$: Observable<unknown>): Observable<unknown> {
  const effects = config.effects;
  if (effects === undefined || call.tool.idempotent === true) return execute$;
  return effects.guard({ ...call, onUnknownOutcome: config.onUnknownOutcome ?? 'tell-model' }, execute$);
}
