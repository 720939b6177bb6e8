/**
 * (g) Fleets on a real redis-server (started here on a free port; skipped when `redis-server`
 * is not installed):
 * - the happy path: a guarded call whose breaker has a Redis store attached vs the memory store
 *   (and vs no fleet): nothing on the happy path touches the store;
 * - convergence on loopback: from the vote that completes the quorum to every node open, with
 *   pub/sub, and with pub/sub cut (the 1 s poll alone);
 * - a dead provider: requests reaching it from 1, 4 and 16 nodes sharing one Redis vs as many
 *   independent breakers (threshold 3, reset 1 s, a call every 20 ms per node, real time).
 * Nodes run in this process, each with its own Redis connections and store (as separate
 * processes would); the fleet spec checks the same rules across real processes.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from 'redis';
import { defer, lastValueFrom, mergeMap, throwError, timer } from 'rxjs';
import { MemoryBreakerStore } from '../../src/core/fleet/fleetStore.js';
import { RedisBreakerStore } from '../../src/redis/index.js';
import { findProgram } from '../../spec/support/systemPackage.js';
import { startRedis, type RedisServer } from '../../spec/support/redisServer.js';
import { interleave, rowsOf, stats, type Row, type Verdict } from '../lib/harness.js';
import { lib } from '../lib/rxheal.js';

export const FIGURE = 'j. fleet (Redis)';
const { CircuitBreaker, circuitBreak, retryWithBackoff, HttpError } = lib;
type Breaker = InstanceType<typeof CircuitBreaker>;

/** One in-process fleet node: its own Redis connections, store and breaker. */
interface Node {
  readonly breaker: Breaker;
  close(): Promise<void>;
}

async function connect(url: string) {
  const client = createClient({ url, disableOfflineQueue: true });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

async function node(url: string, namespace: string, name: string, options: { pubsub: boolean; failureThreshold: number; resetTimeoutMs: number }): Promise<Node> {
  const client = await connect(url);
  const subscriber = options.pubsub ? await connect(url) : undefined;
  const store = new RedisBreakerStore({ client, ...(subscriber ? { subscriber } : {}), namespace });
  const breaker = new CircuitBreaker({ name: 'model:x', failureThreshold: options.failureThreshold, resetTimeoutMs: options.resetTimeoutMs, fleet: { store, node: name } });
  return {
    breaker,
    close: async () => {
      await store.close();
      await client.quit().catch(() => undefined);
      await subscriber?.quit().catch(() => undefined);
    },
  };
}

/** Fails one call on `breaker` (as the circuitBreak operator would report it). */
function fail(breaker: Breaker): void {
  const permit = breaker.acquire();
  if (!(permit instanceof Error)) permit.failure(new HttpError(503));
}

const until = async (check: () => boolean, ms: number): Promise<boolean> => {
  const end = performance.now() + ms;
  while (!check()) {
    if (performance.now() > end) return false;
    await sleep(1);
  }
  return true;
};

/** Ms from the quorum-completing vote to every node open, per trial. */
async function convergence(url: string, pubsub: boolean, trials: number): Promise<number[]> {
  const namespace = `bench-converge-${pubsub ? 'pubsub' : 'poll'}-${process.pid}`;
  const nodes = await Promise.all(['a', 'b', 'c', 'd'].map((n) => node(url, namespace, n, { pubsub, failureThreshold: 1, resetTimeoutMs: 600_000 })));
  const times: number[] = [];
  try {
    await sleep(100);
    for (let trial = 0; trial < trials; trial++) {
      nodes[0]!.breaker.reset(); // fleet-wide
      if (!(await until(() => nodes.every((n) => n.breaker.state === 'closed'), 3_000))) throw new Error('the fleet did not close');
      await sleep(pubsub ? 20 : 1_100); // every node has synced the reset
      const opened = new Map<Breaker, number>();
      const subs = nodes.map((n) => n.breaker.events$.subscribe((e) => e.to === 'open' && !opened.has(n.breaker) && opened.set(n.breaker, performance.now())));
      fail(nodes[0]!.breaker);
      await sleep(20); // the first vote is in
      const t0 = performance.now();
      fail(nodes[1]!.breaker); // the quorum-completing vote
      const ok = await until(() => opened.size === nodes.length, 5_000);
      subs.forEach((s) => s.unsubscribe());
      if (!ok) throw new Error('the fleet did not open');
      times.push(Math.max(...[...opened.values()].map((t) => t - t0)));
    }
  } finally {
    await Promise.all(nodes.map((n) => n.close()));
  }
  return times;
}

/** Requests reaching a dead provider from `size` nodes calling every 20 ms for `ms`. */
async function deadProvider(url: string, size: number, shared: boolean, ms: number): Promise<number> {
  const namespace = `bench-dead-${size}-${process.pid}`;
  const breakers: Breaker[] = [];
  const closers: (() => Promise<void>)[] = [];
  for (let i = 0; i < size; i++) {
    if (shared) {
      const n = await node(url, namespace, `n${i}`, { pubsub: true, failureThreshold: 3, resetTimeoutMs: 1_000 });
      breakers.push(n.breaker);
      closers.push(n.close);
    } else {
      breakers.push(new CircuitBreaker({ name: 'model:x', failureThreshold: 3, resetTimeoutMs: 1_000 }));
    }
  }
  let reached = 0;
  const provider$ = defer(() => {
    reached++;
    return timer(5).pipe(mergeMap(() => throwError(() => new HttpError(503))));
  });
  const calls = breakers.map((b) => provider$.pipe(circuitBreak(b)));
  const end = performance.now() + ms;
  await Promise.all(
    calls.map(async (call$) => {
      while (performance.now() < end) {
        await lastValueFrom(call$).catch(() => undefined);
        await sleep(20);
      }
    }),
  );
  await Promise.all(closers.map((c) => c()));
  return reached;
}

export async function fleet(options: { n: number; reps: number; warmup: number; trials: number; deadMs: number }): Promise<{ rows: Row[]; verdicts: Verdict[] }> {
  const program = findProgram({ name: 'redis-server', command: 'redis-server', install: 'apt-get install redis-server' });
  if (program === undefined) {
    return { rows: [{ figure: FIGURE, name: 'skipped: redis-server not found (apt-get install redis-server)', unit: '', value: 0 }], verdicts: [] };
  }
  const server: RedisServer = await startRedis(program);
  const rows: Row[] = [];
  const verdicts: Verdict[] = [];
  try {
    // ---- the happy path: nothing waits on the store
    const fn = async (): Promise<number> => 42;
    const client = await connect(server.url);
    const subscriber = await connect(server.url);
    const redisStore = new RedisBreakerStore({ client, subscriber, namespace: `bench-happy-${process.pid}` });
    const memoryStore = new MemoryBreakerStore();
    const withRedis$ = defer(fn).pipe(retryWithBackoff(), circuitBreak(new CircuitBreaker({ name: 'model:x', fleet: { store: redisStore } })));
    const withMemory$ = defer(fn).pipe(retryWithBackoff(), circuitBreak(new CircuitBreaker({ name: 'model:x', fleet: { store: memoryStore } })));
    const alone$ = defer(fn).pipe(retryWithBackoff(), circuitBreak(new CircuitBreaker({ name: 'model:x' })));
    const samples = await interleave(
      [
        { name: 'guarded call, memory store', run: async (n) => { for (let i = 0; i < n; i++) await lastValueFrom(withMemory$); } },
        { name: 'guarded call, Redis store', run: async (n) => { for (let i = 0; i < n; i++) await lastValueFrom(withRedis$); } },
        { name: 'guarded call, no fleet', run: async (n) => { for (let i = 0; i < n; i++) await lastValueFrom(alone$); } },
      ],
      options,
    );
    await redisStore.close();
    await Promise.all([client.quit(), subscriber.quit()]);
    const happy = rowsOf(FIGURE, 'ns/call', samples, 'guarded call, memory store');
    rows.push(...happy);
    const ratio = happy.find((r) => r.name === 'guarded call, Redis store')!.ratio!;
    verdicts.push({ figure: 'j', target: 'guarded call with a Redis store ≤ 1.1× the memory store', measured: `${ratio.median.toFixed(2)}× (${ratio.min.toFixed(2)}–${ratio.max.toFixed(2)})`, met: ratio.median <= 1.1 });

    // ---- convergence: quorum vote → every node open
    for (const pubsub of [true, false]) {
      const s = stats(await convergence(server.url, pubsub, options.trials));
      const name = pubsub ? 'fleet-open convergence, pub/sub (4 nodes)' : 'fleet-open convergence, pub/sub cut: poll 1000 ms (4 nodes)';
      rows.push({ figure: FIGURE, name, unit: 'ms', value: s.median, min: s.min, max: s.max, note: `${options.trials} trials; the quorum-completing vote to the last node open` });
      const bound = pubsub ? 50 : 1_050;
      verdicts.push({ figure: 'j', target: `${pubsub ? 'convergence with pub/sub' : 'convergence with pub/sub cut'} ≤ ${bound} ms (median and max)`, measured: `median ${s.median.toFixed(1)} ms, max ${s.max.toFixed(1)} ms`, met: s.median <= bound && s.max <= bound });
    }

    // ---- a dead provider
    for (const size of [1, 4, 16]) {
      const [shared, independent] = await Promise.all([deadProvider(server.url, size, true, options.deadMs), deadProvider(server.url, size, false, options.deadMs)]);
      const note = `${options.deadMs / 1000} s, threshold 3, reset 1 s, a call every 20 ms per node`;
      rows.push({ figure: FIGURE, name: `dead provider, ${size} node${size === 1 ? '' : 's'} sharing one Redis`, unit: 'requests', value: shared, note });
      rows.push({ figure: FIGURE, name: `dead provider, ${size} independent breaker${size === 1 ? '' : 's'}`, unit: 'requests', value: independent, note });
      if (size > 1) verdicts.push({ figure: 'j', target: `dead provider, ${size} nodes: shared < independent`, measured: `${shared} vs ${independent}`, met: shared < independent });
    }
  } finally {
    await server.stop();
  }
  return { rows, verdicts };
}
