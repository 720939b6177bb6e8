/**
 * Property: a signal read late is aborted exactly when it should be. Work handed an
 * `AbortContext` (by `abortable`, and so by `callTool` and `streamModel`) reads `signal` at random
 * moments — before it returns, and later, from code the consumer's unsubscription does not
 * cancel (what runs after an `await`); it finishes (completes or fails) at a random moment, and
 * the consumer may unsubscribe at another. Virtual time orders all of it. A read sees the signal
 * aborted exactly when the consumer left before the work finished and the read comes after that;
 * a signal once aborted stays aborted; the `AbortController` is made only if the work reads it.
 *
 * Used by `lateSignals.spec.ts` (a few hundred runs) and `bench/soak.ts` (tens of thousands).
 */
import { expect } from 'chai';
import fc from 'fast-check';
import * as t from 'io-ts';
import { Observable, VirtualTimeScheduler, type ObservableInput } from 'rxjs';
import { abortable, type AbortContext } from '../../src/core/model/abortable.js';
import type { TurnEvent } from '../../src/core/events/events.js';
import { streamModel } from '../../src/core/model/model.js';
import { callTool, defineTool } from '../../src/sources/tool.js';
import { countControllers } from '../support/abortControllers.js';

export interface LateScenario {
  /** Through which door the work gets its context. */
  readonly via: 'abortable' | 'callTool' | 'streamModel';
  /** Read `signal` synchronously, before the work returns. */
  readonly readAtOnce: boolean;
  /** Later reads, at these virtual times (odd: never the same moment as an unsubscription or the end). */
  readonly reads: readonly number[];
  /** When the work finishes (even), and how; `undefined`: never. */
  readonly finishAt: number | undefined;
  readonly finishWith: 'complete' | 'error';
  /** When the consumer unsubscribes (even, ≠ finishAt); `undefined`: never. */
  readonly unsubscribeAt: number | undefined;
}

const even = fc.integer({ min: 0, max: 20 }).map((n) => 2 * n);
export const lateScenarioArb: fc.Arbitrary<LateScenario> = fc
  .record({
    via: fc.constantFrom<LateScenario['via']>('abortable', 'callTool', 'streamModel'),
    readAtOnce: fc.boolean(),
    reads: fc.array(
      fc.integer({ min: 0, max: 20 }).map((n) => 2 * n + 1),
      { maxLength: 4 },
    ),
    finishAt: fc.option(even, { nil: undefined }),
    finishWith: fc.constantFrom<LateScenario['finishWith']>('complete', 'error'),
    unsubscribeAt: fc.option(even, { nil: undefined }),
  })
  .filter((s) => s.finishAt === undefined || s.finishAt !== s.unsubscribeAt);

/** One read of `signal`: when, and whether it was aborted. */
export interface Read {
  readonly at: number;
  readonly aborted: boolean;
  readonly signal: AbortSignal;
}

export function runLate(s: LateScenario): { reads: Read[]; controllers: number } {
  const scheduler = new VirtualTimeScheduler();
  const reads: Read[] = [];
  const read = (ctx: AbortContext): void => {
    const signal = ctx.signal;
    reads.push({ at: scheduler.now(), aborted: signal.aborted, signal });
  };
  // the work: reads at once (maybe), schedules later reads the consumer cannot cancel (as code
  // after an await), and returns a stream that ends at `finishAt`
  const work = <T>(ctx: AbortContext, end: T): ObservableInput<T> => {
    if (s.readAtOnce) read(ctx);
    for (const at of s.reads) scheduler.schedule(() => read(ctx), at);
    return new Observable<T>((subscriber) => {
      if (s.finishAt === undefined) return undefined;
      const action = scheduler.schedule(() => {
        if (s.finishWith === 'error') return subscriber.error(new Error('work failed'));
        subscriber.next(end);
        subscriber.complete();
      }, s.finishAt);
      return () => action.unsubscribe();
    });
  };
  const finish: TurnEvent = { type: 'finish', reason: 'stop' };
  const call$: Observable<unknown> =
    s.via === 'abortable'
      ? abortable((ctx) => work(ctx, 'done'))
      : s.via === 'callTool'
        ? callTool(defineTool({ name: 'x', description: '', args: t.unknown, execute: (_a, ctx) => work(ctx, 'done') }), { id: 'c', name: 'x', args: {} })
        : streamModel({ id: 'm', stream: (_r, ctx) => work(ctx, finish) }, { messages: [], tools: [] });

  const { constructed } = countControllers(() => {
    const subscription = call$.subscribe({ error: () => undefined });
    if (s.unsubscribeAt !== undefined) scheduler.schedule(() => subscription.unsubscribe(), s.unsubscribeAt);
    scheduler.flush();
  });
  return { reads, controllers: constructed };
}

export function checkLate(s: LateScenario, r: { reads: Read[]; controllers: number }): void {
  // the consumer left before the work finished: from then on every signal is aborted
  const cancelledAt = s.unsubscribeAt !== undefined && (s.finishAt === undefined || s.unsubscribeAt < s.finishAt) ? s.unsubscribeAt : undefined;
  for (const read of r.reads) {
    const expected = cancelledAt !== undefined && read.at > cancelledAt;
    expect(read.aborted, `${s.via}: a read at ${read.at} (consumer left at ${String(cancelledAt)})`).to.equal(expected);
    // and once aborted, it stays aborted
    if (cancelledAt !== undefined) expect(read.signal.aborted, `${s.via}: the signal read at ${read.at}, in the end`).to.equal(true);
  }
  // a signal is one per call: every read hands out the same one
  for (const read of r.reads) expect(read.signal).to.equal(r.reads[0]!.signal);
  // lazy: no AbortController unless the work read the signal
  if (r.reads.length === 0) expect(r.controllers, `${s.via}: no AbortController made`).to.equal(0);
}

export const lateSignalsProperty = fc.property(lateScenarioArb, (s) => checkLate(s, runLate(s)));
