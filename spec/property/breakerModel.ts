/**
 * A reference model of the circuit breaker's rules, written from the documentation (not from
 * the implementation), and a fast-check property that drives the real `CircuitBreaker` through
 * `circuitBreak` side by side with it: random configurations, then random sequences of call
 * starts, outcomes (success, counted failure, ignored error, a value, unsubscribing before or
 * after a value, failing after a value), time jumps, `isolate()` and `reset()`. After every step,
 * admissions (and each rejection's `retryAfterMs`), the state, the consecutive-failure count and
 * every transition event (from, to, reason, time, failures) must be the same.
 *
 * Used by `spec/property/circuitBreaker.spec.ts` (a few hundred runs) and `bench/soak.ts`
 * (tens of thousands).
 */
import fc from 'fast-check';
import { Subject, VirtualTimeScheduler, type Subscription } from 'rxjs';
import { CircuitBreaker, type CircuitBreakerOptions, type CircuitEvent, type CircuitState } from '../../src/core/breaker/CircuitBreaker.js';
import { snapshotBreaker } from '../../src/core/breaker/persist.js';
import { CircuitOpenError, HttpError } from '../../src/core/errors/errors.js';
import { circuitBreak } from '../../src/operators/circuitBreak.js';

// ---------------------------------------------------------------- configuration and commands

export interface ModelConfig {
  readonly failureThreshold: number;
  readonly resetTimeoutMs: number;
  readonly halfOpenMaxCalls: number;
  /** `undefined`: the default (`max(resetTimeoutMs, 1)`). */
  readonly halfOpenTimeoutMs: number | undefined;
  readonly window: 'consecutive' | { readonly failureRateThreshold: number; readonly minimumCalls: number; readonly windowMs: number };
}

/** How one admitted call ends (or goes on). */
export type Outcome =
  | 'complete' // success
  | 'fail' // a 503: counted
  | 'ignored' // a 400: neither failure nor success
  | 'value' // emits a value and stays open
  | 'unsubscribe' // success if it had emitted, else released
  | 'value-then-fail'; // emits, then a 503: counted

export type Command =
  | { readonly kind: 'start' }
  | { readonly kind: 'settle'; readonly pick: number; readonly outcome: Outcome }
  | { readonly kind: 'advance'; readonly ms: number }
  | { readonly kind: 'isolate' }
  | { readonly kind: 'reset' };

export const configArb: fc.Arbitrary<ModelConfig> = fc.record({
  failureThreshold: fc.integer({ min: 1, max: 5 }),
  resetTimeoutMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 2_000 })),
  halfOpenMaxCalls: fc.integer({ min: 1, max: 3 }),
  halfOpenTimeoutMs: fc.option(fc.oneof(fc.constant(Infinity), fc.integer({ min: 1, max: 3_000 })), { nil: undefined }),
  window: fc.oneof(
    { weight: 2, arbitrary: fc.constant('consecutive' as const) },
    {
      weight: 1,
      arbitrary: fc.record({
        failureRateThreshold: fc.oneof(fc.constant(1), fc.constant(0.5), fc.double({ min: 0.05, max: 1, noNaN: true })),
        minimumCalls: fc.integer({ min: 1, max: 5 }),
        windowMs: fc.integer({ min: 10, max: 2_000 }),
      }),
    },
  ),
});

export const commandArb: fc.Arbitrary<Command> = fc.oneof(
  { weight: 20, arbitrary: fc.constant({ kind: 'start' } as const) },
  {
    weight: 28,
    arbitrary: fc.record({
      kind: fc.constant('settle' as const),
      pick: fc.nat(),
      outcome: fc.constantFrom<Outcome>('complete', 'complete', 'fail', 'fail', 'fail', 'ignored', 'value', 'unsubscribe', 'value-then-fail'),
    }),
  },
  {
    weight: 10,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.oneof(fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 3_500 })),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'isolate' } as const) },
  { weight: 1, arbitrary: fc.constant({ kind: 'reset' } as const) },
);

/** Command sequences long enough to open, probe and close a breaker several times. */
export const commandsArb: fc.Arbitrary<Command[]> = fc.array(commandArb, { minLength: 1, maxLength: 150, size: 'large' });

// ---------------------------------------------------------------- the model

interface ModelCall {
  readonly generation: number;
  readonly probe: boolean;
  readonly deadline: number; // Infinity for non-probes or no probe deadline
  emitted: boolean;
  done: boolean;
}

export interface ModelEvent {
  readonly from: CircuitState;
  readonly to: CircuitState;
  readonly reason: string;
  readonly at: number;
  readonly failures: number;
}

/** The rules, as the README and TSDoc state them. */
export class BreakerModel {
  now = 0;
  state: CircuitState = 'closed';
  isolated = false;
  generation = 0;
  consecutive = 0;
  openUntil = 0;
  probeSuccesses = 0;
  readonly events: ModelEvent[] = [];
  /** Outcomes recorded while closed, for the rate window: [bucket, failed]. */
  private outcomes: [number, boolean][] = [];
  private readonly calls: ModelCall[] = [];
  private readonly probeTimeout: number;

  constructor(private readonly config: ModelConfig) {
    this.probeTimeout = config.halfOpenTimeoutMs ?? Math.max(config.resetTimeoutMs, 1);
  }

  private enter(to: CircuitState, reason: string, failures: number): void {
    const from = this.state;
    this.state = to;
    this.generation++;
    this.consecutive = 0;
    this.probeSuccesses = 0;
    this.outcomes = [];
    if (from !== to) this.events.push({ from, to, reason, at: this.now, failures });
  }

  private open(reason: string, failures: number): void {
    this.enter('open', reason, failures);
    this.openUntil = this.now + this.config.resetTimeoutMs;
  }

  /** Open becomes half-open once the reset timeout has passed (unless isolated). */
  refresh(): void {
    if (this.state === 'open' && !this.isolated && this.now >= this.openUntil) this.enter('half-open', 'reset_timeout', 0);
  }

  private pendingProbes(): ModelCall[] {
    return this.calls.filter((c) => c.probe && !c.done && c.generation === this.generation);
  }

  /** A call starts: admitted (returns the call) or rejected (returns retryAfterMs). */
  start(): ModelCall | { retryAfterMs: number } {
    this.refresh();
    if (this.state === 'open') return { retryAfterMs: this.isolated ? Infinity : Math.max(0, this.openUntil - this.now) };
    if (this.state === 'half-open') {
      if (this.pendingProbes().length >= this.config.halfOpenMaxCalls) return { retryAfterMs: 0 };
      const call: ModelCall = { generation: this.generation, probe: true, deadline: this.now + this.probeTimeout, emitted: false, done: false };
      this.calls.push(call);
      return call;
    }
    const call: ModelCall = { generation: this.generation, probe: false, deadline: Infinity, emitted: false, done: false };
    this.calls.push(call);
    return call;
  }

  /** A call reports its outcome: 'success', 'failure' (counted), 'ignored', or 'release'. */
  settle(call: ModelCall, outcome: 'success' | 'failure' | 'ignored' | 'release'): void {
    if (call.done) return;
    call.done = true;
    // outcomes of calls admitted before the last transition change nothing
    if (call.generation !== this.generation) return;
    if (outcome === 'release' || outcome === 'ignored') return;
    const failed = outcome === 'failure';
    if (this.state === 'half-open') {
      if (failed) this.open('probe_failure', 0);
      else if (++this.probeSuccesses >= this.config.halfOpenMaxCalls) this.enter('closed', 'probe_success', 0);
      return;
    }
    const w = this.config.window;
    if (w !== 'consecutive') {
      const width = w.windowMs / 10;
      const bucket = Math.floor(this.now / width);
      this.outcomes.push([bucket, failed]);
      const inWindow = this.outcomes.filter(([b]) => b > bucket - 10);
      const failures = inWindow.filter(([, f]) => f).length;
      if (inWindow.length >= w.minimumCalls && failures / inWindow.length >= w.failureRateThreshold) this.open('failure_rate', failures);
    } else if (failed) {
      if (++this.consecutive >= this.config.failureThreshold) this.open('failure_threshold', this.consecutive);
    } else {
      this.consecutive = 0;
    }
  }

  /** Time passes: the half-open notice and probe deadlines fire in order. */
  advance(ms: number): void {
    const target = this.now + ms;
    for (;;) {
      let next = Infinity;
      let kind: 'wakeup' | 'deadline' | undefined;
      if (this.state === 'open' && !this.isolated && this.openUntil <= target && this.openUntil < next) {
        next = this.openUntil;
        kind = 'wakeup';
      }
      if (this.state === 'half-open') {
        for (const p of this.pendingProbes()) {
          if (p.deadline <= target && p.deadline < next) {
            next = p.deadline;
            kind = 'deadline';
          }
        }
      }
      if (kind === undefined) break;
      this.now = Math.max(this.now, next);
      if (kind === 'wakeup') this.refresh();
      else {
        // a probe outliving its deadline re-opens the breaker
        for (const p of this.pendingProbes()) if (p.deadline === next) p.done = true;
        this.open('probe_timeout', 0);
      }
    }
    this.now = target;
  }

  isolate(): void {
    this.refresh();
    this.isolated = true;
    this.enter('open', 'isolated', 0);
    this.openUntil = Infinity;
  }

  reset(): void {
    this.refresh();
    this.isolated = false;
    this.enter('closed', 'reset', 0);
  }
}

// ---------------------------------------------------------------- the real thing

interface RealCall {
  readonly subject: Subject<number>;
  readonly subscription: Subscription;
  readonly model: ModelCall;
}

const counted = new HttpError(503);
const ignored = new HttpError(400);

/** Runs `commands` on a real breaker and the model; throws at the first divergence. */
export function runAgainstModel(config: ModelConfig, commands: readonly Command[]): void {
  const scheduler = new VirtualTimeScheduler();
  const options: CircuitBreakerOptions = {
    name: 'model',
    failureThreshold: config.failureThreshold,
    resetTimeoutMs: config.resetTimeoutMs,
    halfOpenMaxCalls: config.halfOpenMaxCalls,
    window: config.window,
    scheduler,
    ...(config.halfOpenTimeoutMs === undefined ? {} : { halfOpenTimeoutMs: config.halfOpenTimeoutMs }),
  };
  const breaker = new CircuitBreaker(options);
  const model = new BreakerModel(config);
  const events: CircuitEvent[] = [];
  const eventsSubscription = breaker.events$.subscribe((e) => events.push(e));
  const live: RealCall[] = [];

  const fail = (step: number, what: string, real: unknown, expected: unknown): never => {
    throw new Error(`step ${step} (${JSON.stringify(commands[step])}): ${what} is ${JSON.stringify(real)}, the model says ${JSON.stringify(expected)}`);
  };

  commands.forEach((command, step) => {
    switch (command.kind) {
      case 'start': {
        const predicted = model.start();
        let rejection: unknown;
        const subject = new Subject<number>();
        const subscription = subject.pipe(circuitBreak<number>(breaker)).subscribe({
          error: (e: unknown) => {
            if (e instanceof CircuitOpenError) rejection = e;
          },
        });
        if ('retryAfterMs' in predicted) {
          if (!(rejection instanceof CircuitOpenError)) fail(step, 'admission', 'admitted', 'rejected');
          if ((rejection as CircuitOpenError).retryAfterMs !== predicted.retryAfterMs)
            fail(step, 'retryAfterMs', (rejection as CircuitOpenError).retryAfterMs, predicted.retryAfterMs);
          if (subject.observed) fail(step, 'source subscribed after rejection', true, false);
        } else {
          if (rejection !== undefined) fail(step, 'admission', 'rejected', 'admitted');
          live.push({ subject, subscription, model: predicted });
        }
        break;
      }
      case 'settle': {
        if (live.length === 0) break;
        const index = command.pick % live.length;
        const call = live[index]!;
        switch (command.outcome) {
          case 'complete':
            call.subject.complete();
            model.settle(call.model, 'success');
            break;
          case 'fail':
            call.subject.error(counted);
            model.settle(call.model, 'failure');
            break;
          case 'ignored':
            call.subject.error(ignored);
            model.settle(call.model, 'ignored');
            break;
          case 'value':
            call.subject.next(1);
            call.model.emitted = true;
            break;
          case 'unsubscribe':
            call.subscription.unsubscribe();
            model.settle(call.model, call.model.emitted ? 'success' : 'release');
            break;
          case 'value-then-fail':
            call.subject.next(1);
            call.model.emitted = true;
            call.subject.error(counted);
            model.settle(call.model, 'failure');
            break;
        }
        if (command.outcome !== 'value') live.splice(index, 1);
        break;
      }
      case 'advance': {
        const target = scheduler.now() + command.ms;
        scheduler.schedule(() => undefined, command.ms);
        scheduler.maxFrames = target;
        scheduler.flush();
        model.advance(command.ms);
        if (scheduler.now() !== target) fail(step, 'scheduler time', scheduler.now(), target);
        break;
      }
      case 'isolate':
        breaker.isolate();
        model.isolate();
        break;
      case 'reset':
        breaker.reset();
        model.reset();
        break;
    }
    // observe: reading the state refreshes both
    const state = breaker.state;
    model.refresh();
    if (state !== model.state) fail(step, 'state', state, model.state);
    const snap = snapshotBreaker(breaker);
    if (snap.consecutiveFailures !== model.consecutive) fail(step, 'consecutiveFailures', snap.consecutiveFailures, model.consecutive);
    if (snap.isolated !== model.isolated) fail(step, 'isolated', snap.isolated, model.isolated);
    const realEvents = events.map(({ from, to, reason, at, failures }) => ({ from, to, reason, at, failures }));
    if (JSON.stringify(realEvents) !== JSON.stringify(model.events)) fail(step, 'events', realEvents, model.events);
  });
  for (const call of live) call.subscription.unsubscribe();
  eventsSubscription.unsubscribe();
}

/** The property: the breaker and the model never diverge. */
export const breakerMatchesModel = fc.property(configArb, commandsArb, (config, commands) => {
  runAgainstModel(config, commands);
});
