/**
 * `npm run demo:fleet`: three processes share their breakers through Redis. The primary provider
 * dies; the three open together (a quorum of two opens the third), then, each period, one of them
 * probes under the lease while the others wait for its result; the primary comes back and one
 * probe closes all three. A timeline of what the provider received and how each process moved.
 *
 * Redis: `REDIS_URL` if set, else a `redis-server` started here on a free port (Debian:
 * `apt-get install redis-server`).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { startLocalProvider } from '../../src/server/index.js';
import { findProgram } from '../../spec/support/systemPackage.js';
import { startRedis, type RedisServer } from '../../spec/support/redisServer.js';
import { Fleet } from './fleetHarness.js';
import type { FleetNodeConfig, FleetReport } from './fleetNode.js';

const WHY: Readonly<Record<string, string>> = {
  failure_threshold: 'its own 3 failures',
  fleet_open: 'a quorum of processes opened',
  probe_lease: 'it holds the probe lease: the one prober',
  probe_failure: 'its probe failed: the fleet re-opens',
  probe_success: 'its probe succeeded',
  fleet_probe_success: "the prober's probe succeeded",
  fleet_probe_failure: "the prober's probe failed",
  reset_timeout: 'deciding alone',
};

let start = Date.now();
const line = (text: string): void => console.log(`${String(Date.now() - start).padStart(6)} ms  ${text}`);

let redis: RedisServer | undefined;
let url = process.env['REDIS_URL'] || undefined;
if (url === undefined) {
  const program = findProgram({ name: 'redis-server', command: 'redis-server', install: 'apt-get install redis-server' });
  if (program === undefined) {
    console.error('demo:fleet needs Redis: set REDIS_URL, or install redis-server (Debian: apt-get install redis-server)');
    process.exit(1);
  }
  redis = await startRedis(program);
  url = redis.url;
}

const primary = await startLocalProvider({ name: 'primary', tokenDelayMs: 0 });
const node = (n: number): FleetNodeConfig => ({
  node: `p${n}`,
  redisUrl: url!,
  baseURL: primary.openAIBaseURL,
  badURL: primary.openAIBaseURL,
  failureThreshold: 3,
  resetTimeoutMs: 1_000,
  probeLeaseMs: 800,
  pollMs: 1_000,
  thinkMs: 40,
  tokensPerMinute: 10_000,
  cost: 30,
  maxWaitMs: 1_000,
});

const names = ['p1', 'p2', 'p3'];
const rejected = new Map<string, number>();
let quiet = false;
const onReport = (r: FleetReport): void => {
  if (r.type === 'transition') {
    const waiting = r.reason === 'probe_lease' ? `; ${names.filter((n) => n !== r.node).join(', ')} stay open until its result` : '';
    line(`${r.node}  ${r.from} → ${r.to}`.padEnd(30) + `${r.reason} (${WHY[r.reason] ?? r.reason}${waiting})`);
  }
  if (r.type === 'call' && !r.ok && r.error === 'CircuitOpenError') rejected.set(r.node, (rejected.get(r.node) ?? 0) + 1);
};
const fleet = await Fleet.start(
  names.map((_, i) => node(i + 1)),
  onReport,
);
primary.activity$.subscribe((a) => {
  if (a.type !== 'request-end' || quiet) return;
  const body = a.request.body as { messages?: { content?: string }[] };
  const from = /from (\S+)/.exec(body.messages?.[body.messages.length - 1]?.content ?? '')?.[1] ?? '?';
  line(`      primary ← ${from}: ${a.request.status ?? a.request.end}`);
});

start = Date.now();
line('the primary is down (503 on every request); three processes call it every 40 ms');
primary.faults.set([{ kind: 'status', status: 503 }]);
fleet.tell({ cmd: 'traffic', mode: 'breaker' });
await sleep(3_600);
line(`meanwhile rejected at once, without reaching the provider: ${[...rejected].map(([n, c]) => `${n} ${c}`).join(', ')}`);
const back = Date.now();
line('the primary is back');
primary.faults.clear();
await Promise.all(names.map((n) => fleet.waitFor((r) => r.type === 'transition' && r.node === n && r.to === 'closed' && r.at >= back, 5_000, `${n} closed`)));
quiet = true;
const answered = primary.requests.length;
await sleep(500);
line(`all three closed; in the next 500 ms the primary answered ${primary.requests.length - answered} more requests`);
fleet.tell({ cmd: 'traffic', mode: 'idle' });
await fleet.stop();
await primary.close();
await redis?.stop();
