/**
 * One node of a fleet, run as its own process (`child_process.fork`) by `npm run demo:fleet` and
 * by the fleet spec: an agent (`runAgent`) whose model calls go through a breaker registry that
 * shares its verdicts through Redis, and optionally a tokens/min limit shared the same way. It
 * reports every breaker transition and every call to its parent over IPC, and obeys the parent's
 * commands (traffic on/off, a broken network path of its own, stop).
 *
 * Config: the JSON in `RXHEAL_FLEET_NODE` (see {@link FleetNodeConfig}).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient, createCluster } from 'redis';
import { lastValueFrom, toArray } from 'rxjs';
import {
  CircuitBreakerRegistry,
  RateLimiter,
  circuitBreak,
  classifyError,
  openAICompatibleModel,
  rateLimit,
  runAgent,
  type AgentEvent,
  type Model,
} from '../../src/index.js';
import { RedisBreakerStore, RedisRateLimitStore } from '../../src/redis/index.js';

/** What a node is told at start. */
export interface FleetNodeConfig {
  readonly node: string;
  readonly redisUrl: string;
  /** A Redis Cluster's nodes (`redis://host:port` each): the node connects with `createCluster`, and `redisUrl` is not used. */
  readonly redisCluster?: readonly string[];
  /** The provider's OpenAI base URL. */
  readonly baseURL: string;
  /** A base URL nothing listens on: this node's "bad network path". */
  readonly badURL: string;
  readonly failureThreshold: number;
  readonly resetTimeoutMs: number;
  readonly probeLeaseMs: number;
  readonly pollMs: number;
  /** Pause between two agent runs of this node. */
  readonly thinkMs: number;
  readonly tokensPerMinute: number;
  /** Tokens reserved per call before it runs. */
  readonly cost: number;
  readonly maxWaitMs: number;
}

/** Parent → node. */
export type FleetCommand =
  /** `callers`: how many calls this node keeps going at once (1 unless said; the same until told otherwise). */
  | { readonly cmd: 'traffic'; readonly mode: 'idle' | 'breaker' | 'limit'; readonly callers?: number }
  | { readonly cmd: 'bad'; readonly on: boolean }
  | { readonly cmd: 'stop' };

/** Node → parent. */
export type FleetReport =
  | { readonly type: 'ready'; readonly node: string }
  | { readonly type: 'transition'; readonly node: string; readonly at: number; readonly from: string; readonly to: string; readonly reason: string }
  | {
      readonly type: 'call';
      readonly node: string;
      readonly mode: string;
      readonly start: number;
      readonly end: number;
      readonly ok: boolean;
      readonly error?: string;
      readonly message?: string;
      readonly category?: string;
      readonly tokens?: number;
    }
  | { readonly type: 'stopped'; readonly node: string };

const config = JSON.parse(process.env['RXHEAL_FLEET_NODE'] ?? 'null') as FleetNodeConfig | null;
if (config === null || typeof process.send !== 'function') {
  console.error('fleetNode.ts is started by `npm run demo:fleet` (or the fleet spec) with RXHEAL_FLEET_NODE set, over IPC');
  process.exit(2);
}
const send = (report: FleetReport): void => void process.send?.(report);

const reconnectStrategy = (retries: number): number => Math.min(50 * retries, 200);
/** One server: a client and a subscriber; a cluster: one cluster client, which subscribes on a connection of its own. */
async function connectRedis(c: FleetNodeConfig) {
  if (c.redisCluster !== undefined) {
    const cluster = createCluster({
      rootNodes: c.redisCluster.map((url) => ({ url })),
      defaults: { disableOfflineQueue: true, socket: { reconnectStrategy } },
    });
    cluster.on('error', () => undefined);
    await cluster.connect();
    return { client: cluster, subscriber: cluster, close: () => cluster.close() };
  }
  const single = createClient({ url: c.redisUrl, disableOfflineQueue: true, socket: { reconnectStrategy } });
  single.on('error', () => undefined);
  await single.connect();
  const duplicate = single.duplicate();
  duplicate.on('error', () => undefined);
  await duplicate.connect();
  return { client: single, subscriber: duplicate, close: () => Promise.all([single.disconnect(), duplicate.disconnect()]) };
}
const { client, subscriber, close } = await connectRedis(config);

const store = new RedisBreakerStore({ client, subscriber, pollMs: config.pollMs });
const breakers = new CircuitBreakerRegistry({
  failureThreshold: config.failureThreshold,
  resetTimeoutMs: config.resetTimeoutMs,
  fleet: { store, node: config.node, quorum: { minNodes: 2 }, probeLeaseMs: config.probeLeaseMs },
});
const breaker = breakers.get('model:primary');
breaker.events$.subscribe((e) => send({ type: 'transition', node: config.node, at: Date.now(), from: e.from, to: e.to, reason: e.reason }));
const limiter = new RateLimiter({
  name: 'openai:shared-key',
  tokensPerMinute: config.tokensPerMinute,
  maxWaitMs: config.maxWaitMs,
  store: new RedisRateLimitStore({ client }),
  node: config.node,
});

const good = openAICompatibleModel({ baseURL: config.baseURL, model: 'local', id: 'primary' });
const bad = openAICompatibleModel({ baseURL: config.badURL, model: 'local', id: 'primary' });
let mode: 'idle' | 'breaker' | 'limit' = 'idle';
let broken = false;
let stopped = false;
/** Concurrent callers wanted; caller `i` runs while `i < callers`. */
let callers = 1;
const running = new Set<number>();

process.on('message', (message: FleetCommand) => {
  if (message.cmd === 'traffic') {
    mode = message.mode;
    callers = message.callers ?? callers;
    for (let i = 0; i < callers; i++) if (!running.has(i)) void caller(i);
  } else if (message.cmd === 'bad') broken = message.on;
  else stopped = true;
});

/** One agent run: one model turn through the breaker (and the shared limit in 'limit' mode). */
async function run(model: Model, limited: boolean): Promise<AgentEvent[]> {
  return lastValueFrom(
    runAgent({
      model,
      messages: [{ role: 'user', content: `Hello from ${config!.node}` }],
      maxSteps: 1,
      modelPipeline: (_request, turn$, context) =>
        limited
          ? turn$.pipe(rateLimit(limiter, { cost: config!.cost, hub: context.hub }), circuitBreak(breaker, { hub: context.hub }))
          : turn$.pipe(circuitBreak(breaker, { hub: context.hub })),
    }).pipe(toArray()),
  );
}

/** One caller: an agent run after another (after `thinkMs`), while traffic is on and it is wanted. */
async function caller(i: number): Promise<void> {
  running.add(i);
  while (!stopped && i < callers) {
    if (mode === 'idle') {
      await sleep(10);
      continue;
    }
    const current = mode;
    const start = Date.now();
    try {
      const events = await run(broken ? bad : good, current === 'limit');
      const finish = events.find((e) => e.type === 'finish');
      const tokens = finish?.type === 'finish' && finish.usage ? finish.usage.inputTokens + finish.usage.outputTokens : undefined;
      send({ type: 'call', node: config!.node, mode: current, start, end: Date.now(), ok: true, ...(tokens === undefined ? {} : { tokens }) });
    } catch (error) {
      const e = error as { name?: string; message?: string };
      send({
        type: 'call',
        node: config!.node,
        mode: current,
        start,
        end: Date.now(),
        ok: false,
        error: e.name ?? 'unknown',
        message: String(e.message ?? ''),
        category: classifyError(error).category,
      });
    }
    await sleep(config!.thinkMs);
  }
  running.delete(i);
}

send({ type: 'ready', node: config.node });
void caller(0);
while (!stopped || running.size > 0) await sleep(10);
await store.close();
await close().catch(() => undefined);
send({ type: 'stopped', node: config.node });
process.disconnect?.();
