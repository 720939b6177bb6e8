/**
 * {@link interruptedCall}: what a non-idempotent tool call does when the run finds it started and
 * never finished, with no effect ledger to ask — its `verify` answers (applied: its result; not
 * applied: it runs again), or its outcome is unknown ({@link outcomeUnknown}). One rule for both
 * journals: rxheal's records (a `tool-start` with no outcome) and an engine's steps (a tool round's
 * start step replayed, its call's step not).
 *
 * @module
 */
import { catchError, defaultIfEmpty, defer, map, type Observable, of, switchMap, takeLast, throwError } from 'rxjs';
import type { AgentEvent, ToolCall } from '../core/events/events.js';
import { isLeft } from '../core/errors/options.js';
import { abortable } from '../core/model/abortable.js';
import type { AnyTool, ToolOutcome } from './agentConfig.js';
import { CallContext, resultText, type Verified } from './tool.js';
import { outcomeUnknown, unknownOutcomeText } from './unknownOutcome.js';

/**
 * The run an interrupted call belongs to: its id, its `onUnknownOutcome`, and where an event goes
 * that precedes the error ending the run (`onUnknownOutcome: 'error'`).
 *
 * @example
 * ```ts
 * const run: InterruptedRun = { runId: 'order-7421', onUnknownOutcome: 'tell-model', emit: (e) => subscriber.next(e) };
 * ```
 */
export interface InterruptedRun {
  readonly runId: string;
  readonly onUnknownOutcome: 'tell-model' | 'error';
  emit(event: AgentEvent): void;
}

/**
 * An interrupted non-idempotent call: `verify` answers (applied: its result, not run again; not
 * applied: `run$`), else — no `verify`, a throw, arguments that do not decode, an undecided
 * answer — its outcome is unknown: told to the model, or the run's end.
 *
 * @example
 * ```ts
 * const outcome$ = interruptedCall({ runId, onUnknownOutcome: 'tell-model', emit }, call, tool, run$);
 * ```
 */
export function interruptedCall(run: InterruptedRun, call: ToolCall, tool: AnyTool, run$: () => Observable<ToolOutcome>): Observable<ToolOutcome> {
  const unknown$ = defer((): Observable<ToolOutcome> => {
    const { event, fatal } = outcomeUnknown({ runId: run.runId, callId: call.id, tool: call.name, onUnknownOutcome: run.onUnknownOutcome });
    if (fatal !== undefined) {
      run.emit(event);
      return throwError(() => fatal);
    }
    return of({
      events: [event],
      message: { role: 'tool', toolCallId: call.id, toolName: call.name, content: unknownOutcomeText(call.name), isError: true },
    });
  });
  const verify = tool.verify;
  if (verify === undefined) return unknown$;
  return abortable((context) => {
    const decoded = tool.args.decode(call.args);
    if (isLeft(decoded)) throw new Error('arguments that do not decode');
    return verify(decoded.right, new CallContext(context, call.id));
  }).pipe(
    takeLast(1),
    defaultIfEmpty(undefined),
    map((v: Verified<unknown> | undefined) => v),
    catchError(() => of(undefined)),
    switchMap((v): Observable<ToolOutcome> => {
      if (v?.applied === true)
        return of({
          events: [{ type: 'tool-result', id: call.id, name: call.name, result: v.result }],
          message: { role: 'tool', toolCallId: call.id, toolName: call.name, content: resultText(v.result) },
        });
      return v?.applied === false ? run$() : unknown$;
    }),
  );
}
