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
 *
 * Every row is measured twice: on one redis-server (node-redis `createClient`, a client and a
 * subscriber per node) and on a local 3-master Redis Cluster (node-redis `createCluster`, one
 * cluster client per node, its own pub/sub), the latter skipped without `redis-cli`.
 */
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient, createCluster } from 'redis';
import { defer, lastValueFrom, mergeMap, throwError, timer } from 'rxjs';
import { MemoryBreakerStore } from '../../src/core/fleet/fleetStore.js';
import { RedisBreakerStore } from '../../src/redis/index.js';
import { findProgram } from '../../spec/support/systemPackage.js';
import { startRedis, type RedisServer } from '../../spec/support/redisServer.js';
import { startRedisCluster, type RedisClusterServers } from '../../spec/support/redisCluster.js';
import type { RedisClientLike, RedisSubscriberLike } from '../../src/redis/index.js';
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

/** One node's connections: a client and the subscriber its store listens on (`pubsub`), and how to close them. */
type Connect = (pubsub: boolean) => Promise<{ client: RedisClientLike; subscriber?: RedisSubscriberLike; close(): Promise<void> }>;

async function connect(url: string) {
  const client = createClient({ url, disableOfflineQueue: true });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/** One redis-server: a client and a subscriber per node. */
const single =
  (url: string): Connect =>
  async (pubsub) => {
    const client = await connect(url);
    const subscriber = pubsub ? await connect(url) : undefined;
    return {
      client,
      ...(subscriber ? { subscriber } : {}),
      close: async () => {
        await client.quit().catch(() => undefined);
        await subscriber?.quit().catch(() => undefined);
      },
    };
  };

/** A Redis Cluster: one node-redis cluster client per node (it subscribes on a connection of its own). */
const cluster =
  (servers: RedisClusterServers): Connect =>
  async (pubsub) => {
    const client = createCluster({ rootNodes: servers.nodes.map((n) => ({ url: n.url })), defaults: { disableOfflineQueue: true } });
    client.on('error', () => undefined);
    await client.connect();
    return { client, ...(pubsub ? { subscriber: client } : {}), close: () => client.close().catch(() => undefined) };
  };

async function node(
  connect: Connect,
  namespace: string,
  name: string,
  options: { pubsub: boolean; failureThreshold: number; resetTimeoutMs: number },
): Promise<Node> {
  const { client, subscriber, close } = await connect(options.pubsub);
  const store = new RedisBreakerStore({ client, ...(subscriber ? { subscriber } : {}), namespace });
  const breaker = new CircuitBreaker({
    name: 'model:x',
    failureThreshold: options.failureThreshold,
    resetTimeoutMs: options.resetTimeoutMs,
    fleet: { store, node: name },
  });
  return {
    breaker,
    close: async () => {
      await store.close();
      await close();
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
async function convergence(connect: Connect, pubsub: boolean, trials: number): Promise<number[]> {
  const namespace = `bench-converge-${pubsub ? 'pubsub' : 'poll'}-${process.pid}`;
  const nodes = await Promise.all(['a', 'b', 'c', 'd'].map((n) => node(connect, namespace, n, { pubsub, failureThreshold: 1, resetTimeoutMs: 600_000 })));
  const times: number[] = [];
  try {
    await sleep(100);
    for (let trial = 0; trial < trials; trial++) {
      nodes[0]!.breaker.reset(); // fleet-wide
      if (!(await until(() => nodes.every((n) => n.breaker.state === 'closed'), 3_000))) throw new Error('the fleet did not close');
      // every node has synced the reset and heard it back: 20 ms after it, a node's failure was twice
      // undone (the fleet did not open; bench/README.md, figure j)
      await sleep(pubsub ? 200 : 1_100);
      const opened = new Map<Breaker, number>();
      const subs = nodes.map((n) => n.breaker.events$.subscribe((e) => e.to === 'open' && !opened.has(n.breaker) && opened.set(n.breaker, performance.now())));
      fail(nodes[0]!.breaker);
      await sleep(20); // the first vote is in
      const t0 = performance.now();
      fail(nodes[1]!.breaker); // the quorum-completing vote
      const ok = await until(() => opened.size === nodes.length, 5_000);
      subs.forEach((s) => s.unsubscribe());
      if (!ok) throw new Error(`the fleet did not open (pub/sub ${pubsub}, trial ${trial}: ${nodes.map((n) => n.breaker.state).join(', ')})`);
      times.push(Math.max(...[...opened.values()].map((t) => t - t0)));
    }
  } finally {
    await Promise.all(nodes.map((n) => n.close()));
  }
  return times;
}

/** Requests reaching a dead provider from `size` nodes calling every 20 ms for `ms`. */
async function deadProvider(connect: Connect, size: number, shared: boolean, ms: number): Promise<number> {
  const namespace = `bench-dead-${size}-${process.pid}`;
  const breakers: Breaker[] = [];
  const closers: (() => Promise<void>)[] = [];
  for (let i = 0; i < size; i++) {
    if (shared) {
      const n = await node(connect, namespace, `n${i}`, { pubsub: true, failureThreshold: 3, resetTimeoutMs: 1_000 });
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

export async function fleet(options: {
  n: number;
  reps: number;
  warmup: number;
  trials: number;
  deadMs: number;
}): Promise<{ rows: Row[]; verdicts: Verdict[] }> {
  const program = findProgram({ name: 'redis-server', command: 'redis-server', install: 'apt-get install redis-server' });
  if (program === undefined) {
    return { rows: [{ figure: FIGURE, name: 'skipped: redis-server not found (apt-get install redis-server)', unit: '', value: 0 }], verdicts: [] };
  }
  const rows: Row[] = [];
  const verdicts: Verdict[] = [];
  const server: RedisServer = await startRedis(program);
  try {
    await topology(single(server.url), '', options, rows, verdicts);
  } finally {
    await server.stop();
  }
  const cli = findProgram({ name: 'redis-cli', command: 'redis-cli', install: 'apt-get install redis-tools' });
  if (cli === undefined) {
    rows.push({ figure: FIGURE, name: 'on a 3-master cluster: skipped, redis-cli not found (apt-get install redis-tools)', unit: '', value: 0 });
    return { rows, verdicts };
  }
  process.stderr.write('  j. on a 3-master Redis Cluster …\n');
  const servers = await startRedisCluster(program, cli);
  try {
    await topology(cluster(servers), ', 3-master cluster', options, rows, verdicts);
  } finally {
    await servers.stop();
  }
  return { rows, verdicts };
}

/** Every row of the figure on one topology (`where` ends each row's name and verdict). */
async function topology(
  connect: Connect,
  where: string,
  options: { n: number; reps: number; warmup: number; trials: number; deadMs: number },
  rows: Row[],
  verdicts: Verdict[],
): Promise<void> {
  // ---- the happy path: nothing waits on the store
  const fn = async (): Promise<number> => 42;
  const link = await connect(true);
  const redisStore = new RedisBreakerStore({
    client: link.client,
    ...(link.subscriber ? { subscriber: link.subscriber } : {}),
    namespace: `bench-happy-${process.pid}`,
  });
  const memoryStore = new MemoryBreakerStore();
  const withRedis$ = defer(fn).pipe(retryWithBackoff(), circuitBreak(new CircuitBreaker({ name: 'model:x', fleet: { store: redisStore } })));
  const withMemory$ = defer(fn).pipe(retryWithBackoff(), circuitBreak(new CircuitBreaker({ name: 'model:x', fleet: { store: memoryStore } })));
  const alone$ = defer(fn).pipe(retryWithBackoff(), circuitBreak(new CircuitBreaker({ name: 'model:x' })));
  const redisCase = `guarded call, Redis store${where}`;
  const samples = await interleave(
    [
      {
        name: 'guarded call, memory store',
        run: async (n) => {
          for (let i = 0; i < n; i++) await lastValueFrom(withMemory$);
        },
      },
      {
        name: redisCase,
        run: async (n) => {
          for (let i = 0; i < n; i++) await lastValueFrom(withRedis$);
        },
      },
      {
        name: 'guarded call, no fleet',
        run: async (n) => {
          for (let i = 0; i < n; i++) await lastValueFrom(alone$);
        },
      },
    ],
    options,
  );
  await redisStore.close();
  await link.close();
  const happy = rowsOf(FIGURE, 'ns/call', samples, 'guarded call, memory store');
  rows.push(...(where ? happy.filter((r) => r.name === redisCase) : happy));
  const ratio = happy.find((r) => r.name === redisCase)!.ratio!;
  verdicts.push({
    figure: 'j',
    target: `guarded call with a Redis store${where} ≤ 1.1× the memory store`,
    measured: `${ratio.median.toFixed(2)}× (${ratio.min.toFixed(2)}–${ratio.max.toFixed(2)})`,
    met: ratio.median <= 1.1,
  });

  // ---- convergence: quorum vote → every node open
  for (const pubsub of [true, false]) {
    const s = stats(await convergence(connect, pubsub, options.trials));
    const name = `${pubsub ? 'fleet-open convergence, pub/sub (4 nodes)' : 'fleet-open convergence, pub/sub cut: poll 1000 ms (4 nodes)'}${where}`;
    rows.push({
      figure: FIGURE,
      name,
      unit: 'ms',
      value: s.median,
      min: s.min,
      max: s.max,
      note: `${options.trials} trials; the quorum-completing vote to the last node open`,
    });
    const bound = pubsub ? 50 : 1_050;
    verdicts.push({
      figure: 'j',
      target: `${pubsub ? 'convergence with pub/sub' : 'convergence with pub/sub cut'}${where} ≤ ${bound} ms (median and max)`,
      measured: `median ${s.median.toFixed(1)} ms, max ${s.max.toFixed(1)} ms`,
      met: s.median <= bound && s.max <= bound,
    });
  }

  // ---- a dead provider
  for (const size of [1, 4, 16]) {
    const [shared, independent] = await Promise.all([deadProvider(connect, size, true, options.deadMs), deadProvider(connect, size, false, options.deadMs)]);
    const note = `${options.deadMs / 1000} s, threshold 3, reset 1 s, a call every 20 ms per node`;
    rows.push({
      figure: FIGURE,
      name: `dead provider, ${size} node${size === 1 ? '' : 's'} sharing ${where ? 'a 3-master cluster' : 'one Redis'}`,
      unit: 'requests',
      value: shared,
      note,
    });
    if (!where)
      rows.push({ figure: FIGURE, name: `dead provider, ${size} independent breaker${size === 1 ? '' : 's'}`, unit: 'requests', value: independent, note });
    if (size > 1)
      verdicts.push({
        figure: 'j',
        target: `dead provider, ${size} nodes${where}: shared < independent`,
        measured: `${shared} vs ${independent}`,
        met: shared < independent,
      });
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const quick = process.env['BENCH_QUICK'] === '1';
  const { rows, verdicts } = await fleet(
    quick ? { n: 2_000, reps: 3, warmup: 1, trials: 3, deadMs: 3_000 } : { n: 10_000, reps: 9, warmup: 2, trials: 10, deadMs: 6_000 },
  );
  for (const r of rows)
    console.log(
      `${r.name}: ${r.value.toFixed(1)} ${r.unit}${r.ratio ? ` ${r.ratio.median.toFixed(2)}×` : ''}${r.min === undefined ? '' : ` (${r.min.toFixed(1)}–${r.max!.toFixed(1)})`}`,
    );
  for (const v of verdicts) console.log(`${v.met ? 'met' : 'NOT met'}: ${v.target}: ${v.measured}`);
  process.exit(0);
}
