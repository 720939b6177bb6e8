/**
 * (o) Shared rate limits on Redis, side by side: rxheal's `RateLimiter` (`rateLimit` on a
 * `RedisRateLimitStore`) against bottleneck's Redis clustering mode (`datastore: 'ioredis'`),
 * on a redis-server of its own (skipped without one). Both through ioredis: bottleneck 2.19's
 * `datastore: 'redis'` is written for node-redis ≤ 3 (callbacks, `createClient(options)`), which
 * node-redis 4–6 no longer have; its `'ioredis'` datastore runs on ioredis 5.
 *
 * A node is one limiter in this process with its own ioredis connections (bottleneck's
 * subscriber is its client's `duplicate()`), as a separate process would have.
 *
 * The same allowance for both: a bucket of `limit` calls refilled at `limit` per minute (rxheal:
 * `requestsPerMinute: limit`, GCRA, burst = limit; bottleneck: `reservoir: limit`, +1 every
 * 60 000 / limit ms up to `reservoirIncreaseMaximum: limit`), so over T ms at most
 * limit + limit × T / 60 000 calls may start.
 *
 * - accuracy: 4 and 16 nodes, 4 callers each calling back to back for `ms`; calls counted when
 *   they start (rxheal: the source is subscribed after the wait; bottleneck: the job runs), against
 *   the allowance up to the last start;
 * - Redis commands per served call, two ways: commands the clients sent (every ioredis
 *   `sendCommand`, pipelines' included: round trips, counted in the client), and commands Redis
 *   executed (`INFO commandstats` deltas, the commands inside scripts included);
 * - added latency per call, unsaturated (one node, calls one at a time, an allowance never
 *   reached): a limited call against the same call unlimited, interleaved.
 */
import { performance } from 'node:perf_hooks';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { defer, lastValueFrom } from 'rxjs';
import { RateLimiter } from '../../src/core/rate-limit/rateLimit.js';
import { rateLimit } from '../../src/operators/rateLimit.js';
import { RedisRateLimitStore } from '../../src/redis/index.js';
import { findProgram } from '../../spec/support/systemPackage.js';
import { startRedis, type RedisServer } from '../../spec/support/redisServer.js';
import { stats, type Row, type Verdict } from '../lib/harness.js';

export const FIGURE = 'o. shared rate limits (Redis) vs bottleneck';

// bottleneck is CommonJS with its own types
type BottleneckClass = typeof import('bottleneck').default;
const Bottleneck = createRequire(import.meta.url)('bottleneck') as BottleneckClass;

/** Commands every ioredis connection of this process sent (the figure runs one system at a time). */
let sent = 0;
/** The figure's own connection (INFO commandstats): not counted. */
const uncounted = new WeakSet<Redis>();
const original = Redis.prototype.sendCommand;
Redis.prototype.sendCommand = function (this: Redis, ...args: Parameters<Redis['sendCommand']>) {
  if (!uncounted.has(this)) sent++;
  return original.apply(this, args);
};

interface LimiterNode {
  /** One call through the limiter: resolves when it has started (and run). */
  call(onStart: () => void): Promise<void>;
  /** rxheal: times its store guard opened (the node deciding on its local share for a while). */
  readonly guardOpens: () => number;
  close(): Promise<void>;
}

/** rxheal with its defaults, and with the store's `timeoutMs` at 1 000 ms (replies past 100 ms in a loaded process open its guard). */
type System = 'rxheal' | 'rxheal, timeoutMs 1 000' | 'bottleneck';

async function ready(url: string): Promise<Redis> {
  const client = new Redis(url, { enableOfflineQueue: true, maxRetriesPerRequest: 1, lazyConnect: false });
  client.on('error', () => undefined);
  if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
  return client;
}

async function limiterNode(system: System, url: string, key: string, limit: number, index: number): Promise<LimiterNode> {
  const client = await ready(url);
  if (system !== 'bottleneck') {
    const store = new RedisRateLimitStore({ client, namespace: 'bench', ...(system === 'rxheal' ? {} : { timeoutMs: 1_000 }) });
    const limiter = new RateLimiter({ name: key, requestsPerMinute: limit, maxWaitMs: 2_000, store, node: `n${index}` });
    let opens = 0;
    limiter.storeBreaker?.events$.subscribe((e) => void (e.to === 'open' && opens++));
    return {
      guardOpens: () => opens,
      // a refused call (its wait past maxWaitMs) tries again after 50 ms, not at once
      call: (onStart) =>
        lastValueFrom(defer(async () => onStart()).pipe(rateLimit(limiter)))
          .then(() => undefined)
          .catch(() => sleep(50)),
      close: async () => void client.disconnect(),
    };
  }
  const limiter = new Bottleneck({
    id: key,
    datastore: 'ioredis',
    connection: new Bottleneck.IORedisConnection({ client, Redis }),
    clearDatastore: index === 0,
    maxConcurrent: null,
    minTime: 0,
    reservoir: limit,
    reservoirIncreaseAmount: 1,
    reservoirIncreaseInterval: Math.round(60_000 / limit),
    reservoirIncreaseMaximum: limit,
    // how often a node with queued jobs looks at the reservoir again (default 5 000 ms: it would
    // serve the refill in 5 s steps); 100 ms lets it keep up, for a heartbeat script per node each time
    heartbeatInterval: 100,
  });
  limiter.on('error', () => undefined);
  await limiter.ready();
  return {
    guardOpens: () => 0,
    call: (onStart) => limiter.schedule(async () => onStart()).catch(() => undefined),
    close: async () => {
      await limiter.stop({ dropWaitingJobs: true }).catch(() => undefined);
      await limiter.disconnect(false);
    },
  };
}

/** Commands Redis has executed (inside scripts included), the figure's own INFO calls left out. */
async function executed(admin: Redis): Promise<number> {
  const info = await admin.info('commandstats');
  let n = 0;
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) if (m[1] !== 'info') n += Number(m[2]);
  return n;
}

interface Accuracy {
  readonly served: number;
  readonly allowance: number;
  readonly sentPerCall: number;
  readonly executedPerCall: number;
  readonly spanMs: number;
  readonly guardOpens: number;
}

async function accuracy(system: System, server: RedisServer, admin: Redis, nodes: number, limit: number, ms: number, callers: number): Promise<Accuracy> {
  const key = `bench-${system.replace(/\W/g, '')}-${nodes}-${process.pid}`;
  const all: LimiterNode[] = [];
  for (let i = 0; i < nodes; i++) all.push(await limiterNode(system, server.url, key, limit, i));
  await sleep(200);
  const starts: number[] = [];
  const sentBefore = sent;
  const executedBefore = await executed(admin);
  const t0 = performance.now();
  const end = t0 + ms;
  await Promise.all(
    all.flatMap((node) =>
      Array.from({ length: callers }, async () => {
        while (performance.now() < end) await node.call(() => void (performance.now() < end && starts.push(performance.now())));
      }),
    ),
  );
  const sentDuring = sent - sentBefore;
  const guardOpens = all.reduce((n, node) => n + node.guardOpens(), 0);
  const executedDuring = (await executed(admin)) - executedBefore;
  await Promise.all(all.map((n) => n.close()));
  const last = Math.max(t0, ...starts);
  const allowance = limit + (limit * (last - t0)) / 60_000;
  return {
    served: starts.length,
    allowance,
    sentPerCall: sentDuring / Math.max(1, starts.length),
    executedPerCall: executedDuring / Math.max(1, starts.length),
    spanMs: last - t0,
    guardOpens,
  };
}

/** µs per call, sequential and unsaturated: limited, and the same call with no limiter; paired per repetition. */
async function latency(system: System, url: string, calls: number, reps: number): Promise<{ limited: number[]; plain: number[] }> {
  const node = await limiterNode(system, url, `bench-latency-${system.replace(/\W/g, '')}-${process.pid}`, 10_000_000, 0);
  const plain = async (onStart: () => void): Promise<void> => onStart();
  const limited: number[] = [];
  const bare: number[] = [];
  const time = async (f: (s: () => void) => Promise<void>): Promise<number> => {
    const t0 = performance.now();
    for (let i = 0; i < calls; i++) await f(() => undefined);
    return ((performance.now() - t0) * 1000) / calls;
  };
  await time(node.call); // warm-up
  for (let rep = 0; rep < reps; rep++) {
    limited.push(await time(node.call));
    bare.push(await time(plain));
  }
  await node.close();
  return { limited, plain: bare };
}

export async function rateLimits(options: {
  limit: number;
  ms: number;
  callers: number;
  latencyCalls: number;
  reps: number;
}): Promise<{ rows: Row[]; verdicts: Verdict[] }> {
  const program = findProgram({ name: 'redis-server', command: 'redis-server', install: 'apt-get install redis-server' });
  if (program === undefined) {
    return { rows: [{ figure: FIGURE, name: 'skipped: redis-server not found (apt-get install redis-server)', unit: '', value: 0 }], verdicts: [] };
  }
  const server = await startRedis(program);
  const admin = await ready(server.url);
  uncounted.add(admin);
  const rows: Row[] = [];
  const verdicts: Verdict[] = [];
  const pct = (x: number): string => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(2)} %`;
  try {
    for (const nodes of [4, 16]) {
      const measured: Partial<Record<System, Accuracy>> = {};
      for (const system of ['rxheal', 'rxheal, timeoutMs 1 000', 'bottleneck'] as const) {
        process.stderr.write(`  m. ${system}, ${nodes} nodes …\n`);
        const a = await accuracy(system, server, admin, nodes, options.limit, options.ms, options.callers);
        measured[system] = a;
        const note = `${options.limit}/min (burst ${options.limit}), ${nodes} nodes × ${options.callers} callers, ${(a.spanMs / 1000).toFixed(1)} s; allowance ${a.allowance.toFixed(1)}${system !== 'bottleneck' ? `; store guard opened ${a.guardOpens}×` : ''}`;
        rows.push({
          figure: FIGURE,
          name: `${system}: served, ${nodes} nodes`,
          unit: 'calls',
          value: a.served,
          note: `${pct(a.served / a.allowance - 1)} vs allowance; ${note}`,
        });
        rows.push({
          figure: FIGURE,
          name: `${system}: Redis commands sent per served call, ${nodes} nodes`,
          unit: 'commands',
          value: a.sentPerCall,
          note: 'every ioredis sendCommand of every connection, background ones included',
        });
        rows.push({
          figure: FIGURE,
          name: `${system}: Redis commands executed per served call, ${nodes} nodes`,
          unit: 'commands',
          value: a.executedPerCall,
          note: 'INFO commandstats delta, commands inside scripts included',
        });
        verdicts.push({
          figure: 'o',
          target: `${system}, ${nodes} nodes: served ≤ allowance + 1 %`,
          measured: `${a.served} vs ${a.allowance.toFixed(1)} (${pct(a.served / a.allowance - 1)})`,
          met: a.served <= a.allowance * 1.01,
        });
      }
      const r = measured.rxheal!;
      const b = measured.bottleneck!;
      verdicts.push({
        figure: 'o',
        target: `${nodes} nodes: fewer Redis commands per call than bottleneck (sent; executed)`,
        measured: `sent ${r.sentPerCall.toFixed(2)} vs ${b.sentPerCall.toFixed(2)}; executed ${r.executedPerCall.toFixed(2)} vs ${b.executedPerCall.toFixed(2)}`,
        met: r.sentPerCall < b.sentPerCall && r.executedPerCall < b.executedPerCall,
      });
    }
    for (const system of ['rxheal', 'bottleneck'] as const) {
      const { limited, plain } = await latency(system, server.url, options.latencyCalls, options.reps);
      const added = stats(limited.map((x, i) => x - plain[i]!));
      rows.push({
        figure: FIGURE,
        name: `${system}: added latency per call (one node, unsaturated)`,
        unit: 'µs',
        value: added.median,
        min: added.min,
        max: added.max,
        note: `${options.reps} × ${options.latencyCalls} sequential calls, minus the same call unlimited (paired); loopback`,
      });
    }
  } finally {
    Redis.prototype.sendCommand = original;
    admin.disconnect();
    await server.stop();
  }
  return { rows, verdicts };
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const quick = process.env['BENCH_QUICK'] === '1';
  const { rows, verdicts } = await rateLimits(
    quick ? { limit: 1_200, ms: 2_000, callers: 4, latencyCalls: 100, reps: 3 } : { limit: 1_200, ms: 4_000, callers: 4, latencyCalls: 300, reps: 7 },
  );
  for (const r of rows)
    console.log(`${r.name}: ${r.value.toFixed(2)} ${r.unit}${r.min === undefined ? '' : ` (${r.min.toFixed(1)}–${r.max!.toFixed(1)})`} — ${r.note ?? ''}`);
  for (const v of verdicts) console.log(`${v.met ? 'met' : 'NOT met'}: ${v.target}: ${v.measured}`);
  process.exit(0);
}
