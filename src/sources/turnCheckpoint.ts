/**
 * A journaled run's model-turn checkpoints: what a model says of how far its turn got on the
 * provider's side (`context.checkpoint`, a {@link ModelCheckpoint}) journaled throttled by
 * {@link TurnCheckpoints}, and the interrupted turn of a resumed run continued from the last one
 * by {@link resumedTurn} — or run again when the provider no longer has it.
 *
 * @module
 */
import { catchError, defer, type Observable, type SchedulerLike, type Subscription, tap, throwError } from 'rxjs';
import { HttpError } from '../core/errors/errors.js';
import { errorText } from '../core/errors/sanitize.js';
import type { AgentEvent, TurnEvent, TurnResumeEvent } from '../core/events/events.js';
import type { Model, ModelCheckpoint } from '../core/model/model.js';
import { after } from '../core/rx/wait.js';
import { RECORD_VERSION, type RunRecord } from './runJournal.js';

/**
 * Journals a run's model-turn checkpoints, throttled: a checkpoint of a response not journaled
 * yet (the turn's first, or a new attempt's) at once — it is what makes a resume possible —, then
 * at most one every `intervalMs` of scheduler time (the latest one: those in between are dropped);
 * a turn that started over (a `reset`) journals `null`, so a resume never picks up an abandoned
 * response; a turn that ended ({@link TurnCheckpoints.settle}) journals nothing more.
 *
 * @example
 * ```ts
 * const checkpoints = new TurnCheckpoints(scheduler, 1000, (record) => session.append(asData(record)).subscribe());
 * checkpoints.offer(1, { model: 'gpt', responseId: 'resp_1', sequence: 0 }); // journaled at once
 * ```
 */
export class TurnCheckpoints {
  /** The checkpoint journaled last, of turn `step` (undefined: none, or cleared). */
  private written: { step: number; responseId: string; sequence: number } | undefined;
  private pending: { step: number; checkpoint: ModelCheckpoint } | undefined;
  private timer: Subscription | undefined;

  constructor(
    private readonly scheduler: SchedulerLike,
    private readonly intervalMs: number,
    private readonly write: (record: RunRecord) => void,
  ) {}

  /** Turn `step`'s checkpoint is journaled already (a resumed run's, read back): it is not written again. */
  journaled(step: number, checkpoint: ModelCheckpoint): void {
    this.written = { step, responseId: checkpoint.responseId, sequence: checkpoint.sequence };
  }

  /** A model of turn `step` got this far. */
  offer(step: number, checkpoint: ModelCheckpoint): void {
    const known = this.written?.step === step && this.written.responseId === checkpoint.responseId;
    if (known && checkpoint.sequence <= this.written!.sequence) return;
    if (known && this.timer !== undefined) return void (this.pending = { step, checkpoint });
    this.journal(step, checkpoint);
  }

  /** Turn `step` started over (a retry or a fallback): its journaled checkpoint no longer holds. */
  startedOver(step: number): void {
    this.settle();
    if (this.written?.step !== step) return;
    this.written = undefined;
    this.write({ v: RECORD_VERSION, type: 'checkpoint', step, checkpoint: null });
  }

  /** The turn ended (its message is journaled next, superseding any checkpoint), or the run did: nothing pending is written. */
  settle(): void {
    this.pending = undefined;
    this.timer?.unsubscribe();
    this.timer = undefined;
  }

  private journal(step: number, checkpoint: ModelCheckpoint): void {
    this.pending = undefined;
    this.written = { step, responseId: checkpoint.responseId, sequence: checkpoint.sequence };
    this.write({ v: RECORD_VERSION, type: 'checkpoint', step, checkpoint: { ...checkpoint } });
    this.timer?.unsubscribe();
    // 0: every checkpoint journaled, no timer
    if (this.intervalMs === 0) return;
    this.timer = after(this.intervalMs, this.scheduler, () => {
      this.timer = undefined;
      const next = this.pending;
      if (next !== undefined) this.journal(next.step, next.checkpoint);
    });
  }
}

/** A resuming request the provider refused because it no longer has the response. */
const gone = (error: unknown): boolean => error instanceof HttpError && (error.status === 404 || error.status === 410);

/**
 * The interrupted turn of a resumed run, from its checkpoint: the model of the run with the
 * checkpoint's id (`models`: the run's model and the models inside it) continues it through its
 * `resume` — the turn's events from its start, nothing generated again — with a `turn-resume`
 * event `'resumed'` at its first event. When no such model can resume (`'not-resumable'`), or
 * the provider answers 404 / 410 before any event (`'gone'`), the event says so and the turn runs
 * again (`call(models[0])`), as without a checkpoint; every later subscription (a retry) too. Any
 * other error goes on as it is (retries subscribe again: the response is resumed again, from its
 * start, after the retry's `reset`).
 *
 * @example
 * ```ts
 * const turn$ = resumedTurn(plan.checkpoint!, [model], (m) => streamModel(m, request, context), (e) => run.emit(e));
 * ```
 */
export function resumedTurn(
  checkpoint: ModelCheckpoint,
  models: readonly Model[],
  call: (model: Model) => Observable<TurnEvent>,
  emit: (event: AgentEvent) => void,
): Observable<TurnEvent> {
  const event = (outcome: TurnResumeEvent['outcome'], error?: unknown): TurnResumeEvent => ({
    type: 'turn-resume',
    target: `model:${checkpoint.model}`,
    responseId: checkpoint.responseId,
    sequence: checkpoint.sequence,
    outcome,
    ...(error === undefined ? {} : { error: errorText(error) }),
  });
  const model = models.find((m) => m.id === checkpoint.model && typeof m.resume === 'function');
  let again = false;
  const rerun$ = (outcome: TurnResumeEvent['outcome'], error?: unknown): Observable<TurnEvent> => {
    again = true;
    emit(event(outcome, error));
    return call(models[0]!);
  };
  return defer(() => {
    if (again) return call(models[0]!);
    if (model === undefined) return rerun$('not-resumable');
    const resumer: Model = { id: model.id, stream: (request, context) => model.resume!(checkpoint, request, context) };
    let received = false;
    return call(resumer).pipe(
      tap(() => {
        if (!received) emit(event('resumed'));
        received = true;
      }),
      catchError((error: unknown) => (gone(error) && !received ? rerun$('gone', error) : throwError(() => error))),
    );
  });
}
