/**
 * (e) How many calls reach a dead provider during a 10-minute outage. The provider fails every
 * call with a 503 after 100 ms. Clients:
 * - sequential: one call at a time, the next 1 s after the previous one settled;
 * - burst: 100 calls at the same instant (t = 0);
 * - staggered burst: 100 calls, one every 10 ms (t = 0 … 990 ms);
 * - bursts every 10 s: 100 simultaneous calls at t = 0, 10 s, …, 590 s (6 000 calls).
 * rxheal runs in virtual time (TestScheduler) and, as a cross-check, under the fake clock the
 * peers run under (their `Date.now` / `setTimeout` / `setInterval` replaced); both must agree.
 */
import { asyncScheduler, defer, mergeMap, throwError, timer, type Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { ConsecutiveBreaker, circuitBreaker, handleAll } from 'cockatiel';
import Opossum from 'opossum';
import { FakeClock } from '../lib/fakeClock.js';
import type { Row } from '../lib/harness.js';
import { lib } from '../lib/rxheal.js';

export const FIGURE = 'e. dead provider, 10 min';

const OUTAGE_MS = 600_000;
const LATENCY_MS = 100;
const THINK_MS = 1_000;
const BURST = 100;

export type Scenario = 'sequential' | 'burst' | 'staggered' | 'bursts every 10 s';
export const SCENARIOS: readonly Scenario[] = ['sequential', 'burst', 'staggered', 'bursts every 10 s'];

/** Starts of calls, relative to t = 0, for the scenarios that do not depend on outcomes. */
function starts(scenario: Exclude<Scenario, 'sequential'>): number[] {
  if (scenario === 'burst') return Array<number>(BURST).fill(0);
  if (scenario === 'staggered') return Array.from({ length: BURST }, (_, i) => i * 10);
  const out: number[] = [];
  for (let t = 0; t < OUTAGE_MS; t += 10_000) for (let i = 0; i < BURST; i++) out.push(t);
  return out;
}

export interface Count {
  readonly calls: number;
  readonly reached: number;
}

/** A guard around an observable call: how rxheal is configured in a row. */
type Guard = (call$: Observable<never>) => Observable<never>;

/** Drives the scenario with scheduler callbacks (synchronous), for TestScheduler or the fake clock. */
function driveRx(scenario: Scenario, guard: Guard): () => Count {
  let reached = 0;
  let calls = 0;
  const provider$ = defer(() => {
    reached++;
    return timer(LATENCY_MS).pipe(mergeMap(() => throwError(() => new lib.HttpError(503))));
  });
  const call$ = guard(provider$);
  const call = (done: () => void): void => {
    calls++;
    call$.subscribe({ error: done, complete: done });
  };
  if (scenario === 'sequential') {
    const loop = (): void =>
      call(() => {
        if (asyncScheduler.now() - t0 + THINK_MS < OUTAGE_MS) asyncScheduler.schedule(loop, THINK_MS);
      });
    const t0 = asyncScheduler.now();
    loop();
  } else {
    for (const at of starts(scenario)) asyncScheduler.schedule(() => call(() => undefined), at);
  }
  return () => ({ calls, reached });
}

/** rxheal in virtual time. */
export function rxhealVirtual(scenario: Scenario, guard: () => Guard): Count {
  let result: (() => Count) | undefined;
  new TestScheduler(() => undefined).run(() => {
    result = driveRx(scenario, guard());
  });
  return result!();
}

/** rxheal on `asyncScheduler` under the fake clock (the cross-check). */
export async function rxhealFakeClock(scenario: Scenario, guard: () => Guard): Promise<Count> {
  const clock = new FakeClock();
  clock.install();
  try {
    const result = driveRx(scenario, guard());
    await clock.advanceTo(OUTAGE_MS + 120_000);
    return result();
  } finally {
    clock.uninstall();
  }
}

/** A peer: `exec(provider)` runs one guarded call. */
type PeerExec = (provider: () => Promise<never>) => Promise<unknown>;

async function drivePeer(scenario: Scenario, make: () => { exec: PeerExec; dispose?: () => void }): Promise<Count> {
  const clock = new FakeClock();
  clock.install();
  let reached = 0;
  let calls = 0;
  const peer = make();
  try {
    const provider = async (): Promise<never> => {
      reached++;
      await new Promise((resolve) => setTimeout(resolve, LATENCY_MS));
      throw new lib.HttpError(503);
    };
    const call = (): Promise<void> => {
      calls++;
      return peer.exec(provider).then(
        () => undefined,
        () => undefined,
      );
    };
    if (scenario === 'sequential') {
      const loop = (): void => {
        void call().then(() => {
          if (clock.elapsed + THINK_MS < OUTAGE_MS) setTimeout(loop, THINK_MS);
        });
      };
      loop();
    } else {
      for (const at of starts(scenario)) setTimeout(() => void call(), at);
    }
    await clock.advanceTo(OUTAGE_MS + 120_000);
    return { calls, reached };
  } finally {
    peer.dispose?.();
    clock.uninstall();
  }
}

/** rxheal's configurations, with the bound "calls to decide + probes per reset window". */
export const RXHEAL: readonly { name: string; guard: () => Guard; bound: number; note: string }[] = [
  {
    name: 'rxheal circuitBreak (defaults: 5 consecutive, 60 s)',
    guard: () => lib.circuitBreak(new lib.CircuitBreaker()),
    bound: 5 + Math.ceil(OUTAGE_MS / 60_000),
    note: '5 failures + 1 probe per 60 s window',
  },
  {
    name: 'rxheal circuitBreak, rate window (50 %, min 10, 30 s)',
    guard: () => lib.circuitBreak(new lib.CircuitBreaker({ window: { failureRateThreshold: 0.5, minimumCalls: 10, windowMs: 30_000 } })),
    bound: 10 + Math.ceil(OUTAGE_MS / 60_000),
    note: '10 calls to judge the rate + 1 probe per 60 s window',
  },
];

export const PEERS: readonly { name: string; make: () => { exec: PeerExec; dispose?: () => void } }[] = [
  {
    name: 'cockatiel ConsecutiveBreaker(5), halfOpenAfter 10 s',
    make: () => {
      const policy = circuitBreaker(handleAll, { halfOpenAfter: 10_000, breaker: new ConsecutiveBreaker(5) });
      return { exec: (provider) => policy.execute(provider) };
    },
  },
  {
    name: 'opossum defaults (50 %, 30 s reset, 10 s window)',
    make: () => {
      const calls = new Map<object, () => Promise<never>>();
      const breaker = new Opossum((key: object) => calls.get(key)!());
      return {
        exec: (provider) => {
          const key = {};
          calls.set(key, provider);
          return breaker.fire(key).finally(() => calls.delete(key));
        },
        dispose: () => breaker.shutdown(),
      };
    },
  },
];

/** What each scenario's number means, for the table. */
const NOTES: Record<Scenario, (r: { bound: number; note: string }) => string> = {
  sequential: (r) => `; bound ${r.bound} (${r.note})`,
  burst: () => '; simultaneous: admission is decided at call start, before any outcome exists, so no breaker (rate window included) can refuse any of them',
  staggered: () => '; one every 10 ms: the breaker opens once enough failures are in (late failures of earlier calls are not counted twice)',
  'bursts every 10 s': () => '; the first burst passes (see burst), each later one is refused but for one probe per reset window',
};

export async function outage(): Promise<{ rows: Row[]; mismatches: string[]; counts: Record<string, Record<Scenario, Count>> }> {
  const rows: Row[] = [];
  const mismatches: string[] = [];
  const counts: Record<string, Record<Scenario, Count>> = {};
  for (const r of RXHEAL) {
    counts[r.name] = {} as Record<Scenario, Count>;
    for (const s of SCENARIOS) {
      const virtual = rxhealVirtual(s, r.guard);
      const fake = await rxhealFakeClock(s, r.guard);
      if (virtual.reached !== fake.reached || virtual.calls !== fake.calls) {
        mismatches.push(`${r.name} / ${s}: TestScheduler ${JSON.stringify(virtual)} vs fake clock ${JSON.stringify(fake)}`);
      }
      counts[r.name]![s] = virtual;
      rows.push({ figure: FIGURE, name: `${r.name} — ${s}`, unit: 'calls reached', value: virtual.reached, note: `of ${virtual.calls} calls${NOTES[s](r)}` });
    }
  }
  for (const p of PEERS) {
    counts[p.name] = {} as Record<Scenario, Count>;
    for (const s of SCENARIOS) {
      const c = await drivePeer(s, p.make);
      counts[p.name]![s] = c;
      rows.push({ figure: FIGURE, name: `${p.name} — ${s}`, unit: 'calls reached', value: c.reached, note: `of ${c.calls} calls` });
    }
  }
  return { rows, mismatches, counts };
}
