/**
 * {@link effectLedger}: side effects exactly once. Over any journal store (the journal's lease
 * rules give it what it needs: one writer per key across processes, records durable before the
 * step that depends on them), each guarded tool call is one ledger entry keyed by its idempotency
 * key — a store run of its own, `fx2-<SHA-256 of the key>`, whose records say `started`, `done` (with
 * the result) or `failed` (the tool said its effect did not happen). An attempt that ends any
 * other way leaves `started`: the outcome is unknown, and the next execution of that key
 * reconciles it (the tool's `verify`) or reports it, never guesses.
 *
 * @module
 */
import { asyncScheduler, concatMap, interval, map, Observable, Subscription, type SchedulerLike, type Subscriber } from 'rxjs';
import { InvalidOptionError, ToolError } from '../core/errors/errors.js';
import { notApplied } from '../core/errors/notApplied.js';
import { LeaseMs } from '../core/journal/journal.js';
import { check, NonEmptyString, Scheduler, validateOptions } from '../core/errors/options.js';
import { errorText } from '../core/errors/sanitize.js';
import type { ToolCall } from '../core/events/events.js';
import type { ToolOutcomeUnknownEvent } from '../core/events/runEvents.js';
import type { HealHub } from '../core/hub/hub.js';
import { argsHash, HASH_SCHEME, randomName, textHash } from '../core/journal/idempotency.js';
import { RunLockedError } from '../core/journal/errors.js';
import type { JournalData, JournalEntry, JournalSession, JournalStore } from '../core/journal/journal.js';
import { isLeft } from '../core/errors/options.js';
import { abortable } from '../core/model/abortable.js';
import { markFatal } from '../core/rx/runScope.js';
import { guard, Thrown } from '../core/rx/guard.js';
import { wait } from '../core/rx/wait.js';
import { CallContext, repeatable, type Tool, type Verified } from './tool.js';
import { outcomeUnknown, unknownOutcomeText } from './unknownOutcome.js';

/**
 * Options of {@link effectLedger}.
 *
 * @example
 * ```ts
 * const options: EffectLedgerOptions = { leaseMs: 60_000, pollMs: 100, scheduler: testScheduler };
 * ```
 */
export interface EffectLedgerOptions {
  /** How long a key's lease lasts while its tool runs (renewed every third of it). Defaults to 30 000. */
  readonly leaseMs?: number;
  /** While another execution holds a key, how often it is asked again, in ms. Defaults to 50. */
  readonly pollMs?: number;
  /** Lease renewals and the waits of a held key. Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
  /** Who holds a key while its tool runs (each execution adds its own suffix). Defaults to a random name. */
  readonly holder?: string;
}

/**
 * A key's state in the ledger: never seen, `started` (running, or its outcome unknown),
 * `done` (with its result), `failed` (not applied).
 *
 * @example
 * ```ts
 * const state: EffectState = { state: 'done', tool: 'charge', argsHash: '9f1c…', result: { id: 'ch_1' } };
 * ```
 */
export type EffectState =
  | { readonly state: 'none' }
  | { readonly state: 'started' | 'failed'; readonly tool: string; readonly argsHash: string; readonly attempts: number }
  | { readonly state: 'done'; readonly tool: string; readonly argsHash: string; readonly attempts: number; readonly result: unknown };

/**
 * One guarded tool call, as the agent loop hands it to the ledger.
 *
 * @example
 * ```ts
 * ledger.guard({ key: 'order-7421/3/0/charge', runId: 'order-7421', tool: charge, call, hub, onUnknownOutcome: 'tell-model' }, execute$);
 * ```
 */
export interface GuardedCall {
  /** The call's idempotency key. */
  readonly key: string;
  /** The run it belongs to (named by a `ToolOutcomeUnknownError`). */
  readonly runId: string;
  // a tool of any argument type (`Tool<A>` is invariant in A)
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly tool: Tool<any, unknown>;
  readonly call: ToolCall;
  /** Where `tool-deduplicated` is reported. */
  readonly hub: HealHub | undefined;
  /** An outcome that stays unknown: told to the model (a tool error it reads) or the run's end. */
  readonly onUnknownOutcome: 'tell-model' | 'error';
  /** The call checkpointed before (`ToolContext.checkpoint`): a `started` key runs again — the tool carries on its own work — instead of reconciling. */
  readonly resumable?: boolean;
  /** Where the run's `tool-outcome-unknown` goes (its stream), when the ledger cannot tell an outcome. */
  readonly emit?: ((event: ToolOutcomeUnknownEvent) => void) | undefined;
}

/**
 * An effect ledger: `runAgent({ effects })` guards every call of a tool that is not
 * `idempotent: true` with it.
 *
 * @example
 * ```ts
 * const effects: EffectLedger = effectLedger(memoryJournal());
 * effects.state('order-7421/3/0/charge').subscribe((s) => console.log(s.state)); // 'done'
 * ```
 */
export interface EffectLedger {
  /**
   * `execute$` (one execution of the call's tool) under the ledger: a `done` key answers from its
   * record without subscribing it; otherwise `started` is written before it runs and `done` or
   * `failed` after. Waits while another execution holds the key.
   */
  guard(call: GuardedCall, execute$: Observable<unknown>): Observable<unknown>;
  /** A key's state, without taking it (never waits). */
  state(key: string): Observable<EffectState>;
}

/** The ledger's record version. */
const V = 1;

/** The store run that holds one key's records: the hash's scheme, then the key's hash (`fx2-` and 32 hex digits). */
export const ledgerRunId = (key: string): string => `${HASH_SCHEME}-${textHash(key)}`;

/** A key's records as its state (and the key they were written for: a hash collision is refused). */
function stateOf(entries: readonly JournalEntry[]): EffectState & { readonly key?: string } {
  const first = entries.find((e) => e.data['type'] === 'started')?.data;
  const last = entries[entries.length - 1]?.data;
  if (first === undefined || last === undefined) return { state: 'none' };
  const base = {
    key: first['key'] as string,
    tool: first['tool'] as string,
    argsHash: first['argsHash'] as string,
    attempts: entries.filter((e) => e.data['type'] === 'started').length,
  };
  if (last['type'] === 'done') return { state: 'done', ...base, result: last['result'] };
  return { state: last['type'] === 'failed' ? 'failed' : 'started', ...base };
}

/** A result as the ledger keeps it: its JSON value (`null` for none). */
function stored(result: unknown): unknown {
  try {
    const text = JSON.stringify(result);
    return text === undefined ? null : (JSON.parse(text) as unknown);
  } catch {
    return String(result);
  }
}

let executions = 0;

/**
 * An effect ledger over a journal store — `memoryJournal()`, `fileJournal()` (`rxheal/durable`),
 * `redisJournal()` (`rxheal/redis`), `postgresJournal()` (`rxheal/postgres`), or a store of your own
 * that keeps the journal's contract — shared by every process that runs the same calls.
 *
 * Per guarded call, on every rxheal store: one write before the tool runs — the claim of its key
 * (the lease: one execution at a time, fleet-wide) with its `started` record (`claimWith`) — and
 * one after it, its end with the release (`finish`; on the file store the release follows, not
 * waited for). A store of your own without those two makes a claim and two appends. A key that
 * is `done` answers from its record (`tool-deduplicated`); arguments that differ from the
 * recorded ones under the same key are a `ToolError` naming both hashes; a key left `started`
 * (an attempt that timed out, was cut, or whose process died) is reconciled by the tool's `verify`
 * (`{ applied: true, result }` is recorded `done`; `{ applied: false }` runs it) or, without
 * one, reported: the model is told the outcome is unknown, or the run ends with
 * `ToolOutcomeUnknownError` (`onUnknownOutcome: 'error'`). A tool declared `idempotent: 'by-key'`
 * simply runs again under the same key. A store that fails ends the run.
 *
 * @example
 * ```ts
 * import { fileJournal } from 'rxheal/durable';
 *
 * runAgent({ model, tools: [charge], messages, runId: 'order-7421', journal, effects: effectLedger(fileJournal({ dir: './effects' })) });
 * ```
 * @throws {InvalidOptionError} for a store that is not a journal store, or a bad option.
 */
export function effectLedger(store: JournalStore, options?: EffectLedgerOptions): EffectLedger {
  const isStore = typeof store === 'object' && store !== null && typeof store.claim === 'function' && typeof store.read === 'function';
  if (!isStore)
    throw new InvalidOptionError(
      'effectLedger',
      'store',
      store,
      'a JournalStore ({ claim, read }): memoryJournal(), fileJournal(), redisJournal(), postgresJournal()',
    );
  const o = validateOptions(
    'effectLedger',
    {
      leaseMs: LeaseMs,
      pollMs: check('a number of ms > 0', (u): u is number => typeof u === 'number' && Number.isFinite(u) && u > 0),
      scheduler: Scheduler,
      holder: NonEmptyString,
    },
    options,
  );
  const settings: LedgerSettings = {
    store,
    leaseMs: o.leaseMs ?? 30_000,
    pollMs: o.pollMs ?? 50,
    scheduler: o.scheduler ?? asyncScheduler,
    holder: o.holder ?? randomName('rxheal-fx'),
  };
  return {
    guard: (call, execute$) => new Observable<unknown>((subscriber) => new Guarded(settings, call, execute$, subscriber).start()),
    state: (key) =>
      store.read(ledgerRunId(key)).pipe(
        map((entries): EffectState => {
          const state: EffectState & { key?: string } = { ...stateOf(entries) };
          delete state.key;
          return state;
        }),
      ),
  };
}

interface LedgerSettings {
  readonly store: JournalStore;
  readonly leaseMs: number;
  readonly pollMs: number;
  readonly scheduler: SchedulerLike;
  readonly holder: string;
}

/** One guarded execution: its claim of the key, its records, its tool. Its teardown releases the key. */
class Guarded {
  private session: JournalSession | undefined;
  private readonly holder: string;
  private readonly work = new Subscription();
  private renewal: Subscription | undefined;
  private ended = false;
  private startedRecord: JournalData | undefined;

  constructor(
    private readonly settings: LedgerSettings,
    private readonly call: GuardedCall,
    private readonly execute$: Observable<unknown>,
    private readonly subscriber: Subscriber<unknown>,
  ) {
    this.holder = `${settings.holder}#${++executions}`;
  }

  start(): () => void {
    this.claim();
    return () => this.teardown();
  }

  private get runId(): string {
    return ledgerRunId(this.call.key);
  }

  /** The record written before the tool runs. */
  private started(): JournalData {
    const { call, tool, key } = this.call;
    return (this.startedRecord ??= { v: V, type: 'started', key, tool: tool.name, argsHash: argsHash(call.args), callId: call.id });
  }

  /**
   * Takes the key's lease — with the `started` record in the same write where the store can and
   * the key is new (`claimWith`) —; while another execution holds it, asks again every `pollMs`.
   */
  private claim(): void {
    const { store, leaseMs, pollMs, scheduler } = this.settings;
    const claim = { runId: this.runId, holder: this.holder, leaseMs };
    const claim$ = guard(() => (store.claimWith === undefined ? store.claim(claim) : store.claimWith(claim, this.started())));
    if (claim$ instanceof Thrown) return this.storeFailed(claim$.error);
    this.track(
      claim$.subscribe({
        next: (session) => this.claimed(session),
        error: (error: unknown) => {
          if (!(error instanceof RunLockedError && error.reason === 'held')) return this.storeFailed(error);
          const delay = Math.max(1, Math.min(pollMs, error.retryAfterMs ?? pollMs));
          this.track(wait(delay, scheduler).subscribe(() => this.claim()));
        },
      }),
    );
  }

  private claimed(session: JournalSession): void {
    this.session = session;
    // the key was new: its `started` record came with the claim
    if (session.firstWritten === true) return this.execute();
    const { call, tool, key } = this.call;
    const state = stateOf(session.entries);
    if (state.state === 'none' || state.state === 'failed') return this.run();
    if (state.key !== key) return this.storeFailed(new Error(`effectLedger: keys ${JSON.stringify(state.key)} and ${JSON.stringify(key)} share a hash`));
    const hash = argsHash(call.args);
    if (state.argsHash !== hash) {
      const message =
        `the arguments of '${tool.name}' differ from those recorded under idempotency key ${JSON.stringify(key)} ` +
        `(recorded: ${state.argsHash}, this call: ${hash}): a re-planned call is not the one that ran`;
      return this.end(() => this.subscriber.error(this.toolError('validate', message)));
    }
    if (state.state === 'done') return this.deduplicated(state.result);
    // started, never finished: the outcome is unknown
    if (repeatable(tool) || this.call.resumable === true) return this.run();
    this.reconcile(undefined);
  }

  /** Writes `started`, then runs the tool. */
  private run(): void {
    this.append(this.started(), () => this.execute());
  }

  /** Runs the tool (its `started` record written), then writes its end. */
  private execute(): void {
    const session = this.session!;
    this.renewal = interval(Math.max(1, Math.floor(this.settings.leaseMs / 3)), this.settings.scheduler)
      .pipe(concatMap(() => session.renew()))
      .subscribe({ error: () => undefined });
    let last: unknown;
    let emitted = false;
    this.track(
      this.execute$.subscribe({
        next: (value) => {
          last = value;
          emitted = true;
        },
        error: (error: unknown) => {
          this.renewal?.unsubscribe();
          const cause = error instanceof ToolError ? error.cause : error;
          if (notApplied(cause)) return this.finish({ v: V, type: 'failed', error: errorText(cause, 500) }, () => this.subscriber.error(error));
          if (error instanceof ToolError && error.phase === 'validate') return this.end(() => this.subscriber.error(error));
          this.reconcile(error);
        },
        complete: () => {
          this.renewal?.unsubscribe();
          const result = emitted ? last : undefined;
          this.finish({ v: V, type: 'done', result: stored(result) }, () => this.deliver(result));
        },
      }),
    );
  }

  /**
   * A started call whose outcome is unknown (found so, or its attempt just failed with `error`):
   * the tool's `verify` answers, or the outcome is reported.
   */
  private reconcile(error: unknown): void {
    const { tool, call } = this.call;
    const verify = tool.verify as ((args: unknown, context: CallContext) => Observable<Verified<unknown>>) | undefined;
    const unknown = (): void => this.end(() => this.subscriber.error(this.unknownOutcome(error)));
    if (verify === undefined) return unknown();
    let verdict: Verified<unknown> | undefined;
    this.track(
      abortable((context) => {
        const decoded = tool.args.decode(call.args);
        if (isLeft(decoded)) throw new Error('arguments that do not decode');
        return verify(decoded.right, new CallContext(context, call.id, this.call.key));
      }).subscribe({
        next: (v) => (verdict = v),
        error: unknown,
        complete: () => {
          if (verdict?.applied === true) {
            const result = verdict.result;
            return this.finish({ v: V, type: 'done', result: stored(result) }, () => this.deliver(result));
          }
          if (verdict?.applied !== false) return unknown();
          // not applied: recorded so; a call found unknown runs now, a failed attempt's error goes on (retryable)
          if (error === undefined) return this.run();
          this.finish({ v: V, type: 'failed', error: 'verify: not applied' }, () =>
            this.subscriber.error(this.toolError('execute', errorText(error), error, true)),
          );
        },
      }),
    );
  }

  /** The outcome stays unknown: the run's one rule for it (the event, then the model told or the run ended). */
  private unknownOutcome(error: unknown): Error {
    const { call, tool, runId, onUnknownOutcome, emit } = this.call;
    const { event, fatal } = outcomeUnknown({ runId, callId: call.id, tool: tool.name, onUnknownOutcome });
    emit?.(event);
    if (fatal !== undefined) return fatal;
    const why = error === undefined ? 'an earlier attempt never said how it ended' : errorText(error, 300);
    // a tool that deduplicates by key may still be retried: the retry is the reconciliation
    return this.toolError('execute', unknownOutcomeText(tool.name, why), error, repeatable(tool));
  }

  private toolError(phase: 'validate' | 'execute', message: string, cause?: unknown, idempotent = false): ToolError {
    const { call, tool } = this.call;
    return new ToolError({ toolName: tool.name, callId: call.id, args: call.args, phase, idempotent, message, ...(cause === undefined ? {} : { cause }) });
  }

  /** The call's result from its record: the tool does not run (`tool-deduplicated`). */
  private deduplicated(result: unknown): void {
    const { call, tool, key, hub } = this.call;
    this.end(() => {
      hub?.report({ type: 'tool-deduplicated', callId: call.id, tool: tool.name, key });
      this.deliver(result);
    });
  }

  private deliver(result: unknown): void {
    this.subscriber.next(result);
    this.subscriber.complete();
  }

  /** Appends `record`, then goes on; a store that cannot write ends the run. */
  private append(record: JournalData, next: () => void): void {
    const append$ = guard(() => this.session!.append(record));
    if (append$ instanceof Thrown) return this.storeFailed(append$.error);
    this.track(append$.subscribe({ error: (error: unknown) => this.storeFailed(error), complete: next }));
  }

  /**
   * Writes the key's last record and gives the key up — in one write where the store can
   * (`finish`) —, then delivers.
   */
  private finish(record: JournalData, deliver: () => void): void {
    const session = this.session!;
    if (session.finish === undefined) return this.append(record, () => this.end(deliver));
    const finish$ = guard(() => session.finish!(record));
    if (finish$ instanceof Thrown) return this.storeFailed(finish$.error);
    this.track(
      finish$.subscribe({
        error: (error: unknown) => this.storeFailed(error),
        complete: () => {
          // released by the write itself
          this.session = undefined;
          this.end(deliver);
        },
      }),
    );
  }

  private storeFailed(error: unknown): void {
    markFatal(error);
    this.end(() => this.subscriber.error(error));
  }

  /** Work in flight, cancelled by the teardown (a finished one leaves the set by itself). */
  private track(work: Subscription): void {
    this.work.add(work);
  }

  /** Releases the key (not waited for), then delivers. Once. */
  private end(deliver: () => void): void {
    if (this.ended) return;
    this.ended = true;
    this.release();
    deliver();
  }

  private release(): void {
    this.renewal?.unsubscribe();
    this.session?.release().subscribe({ error: () => undefined });
    this.session = undefined;
  }

  /** The subscriber left (a hedge lost, a timeout, the run ended): the key is released, its state stays as written. */
  private teardown(): void {
    this.work.unsubscribe();
    if (this.ended) return;
    this.ended = true;
    this.release();
  }
}
