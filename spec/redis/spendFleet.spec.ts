/**
 * The money limit's proof on real processes: 16 OS processes (spec/support/spendWorker.ts) × 4
 * concurrent callers share one limit of $1 per minute, `new SpendLimiter({ usd: 1, per: 60_000,
 * store: new RedisSpendStore(…) })` in each process — on one redis-server (node-redis) and on a
 * 3-master Redis Cluster (ioredis); and the store's protocol driven directly. Each caller reserves a
 * worst case ($0.005–$0.03), makes its call (a few ms), then adjusts to the actual cost (below the
 * hold, sometimes a refund, sometimes up to 10 % more than it held), until refused 3 times in a
 * row. Reservations cannot overshoot: what the window was spent ends at most the limit plus what
 * the callers charged above their holds — and exactly what the calls cost (nothing lost or counted
 * twice by 64 callers at once).
 */
import { expect } from 'chai';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from 'redis';
import { hashTag } from '../../src/redis/keys.js';
import { NANOS_PER_USD } from '../../src/core/money/spendStore.js';
import { requireProgram } from '../support/systemPackage.js';
import { startRedis, type RedisServer } from '../support/redisServer.js';
import { startRedisCluster, type RedisClusterServers } from '../support/redisCluster.js';
import { spendFleet, type SpendFleet, type SpendFleetRun } from '../support/spendFleet.js';

const PROCESSES = 16;
const CALLERS = 4;
const WINDOW_MS = 60_000;
const LIMIT = NANOS_PER_USD; // $1 per minute
const usd = (nanos: number): string => `$${(nanos / NANOS_PER_USD).toFixed(4)}`;

describe('a $1/min limit shared by 16 processes × 4 callers through RedisSpendStore', function () {
  this.timeout(60_000);
  let server: RedisServer | undefined;
  let cluster: RedisClusterServers | undefined;
  let fleet: SpendFleet | undefined;
  before(async function () {
    const program = requireProgram(this, { name: 'redis-server', command: 'redis-server', install: 'apt-get install redis-server (.ci/run does)' });
    const cli = requireProgram(this, { name: 'redis-cli', command: 'redis-cli', install: 'apt-get install redis-server (.ci/run does; it ships redis-cli)' });
    this.timeout(60_000);
    // the processes start (tsx compiles each: the slow part) while the servers do
    fleet = spendFleet(PROCESSES);
    [server, cluster] = await Promise.all([startRedis(program), startRedisCluster(program, cli, 3)]);
    await Promise.all([
      fleet.connect('redis', { kind: 'redis', url: server.url }, 'fleet', 2_000),
      fleet.connect('cluster', { kind: 'cluster', ports: cluster.nodes.map((n) => n.port) }, 'fleet-cluster', 2_000),
    ]);
  });
  after(async () => {
    await fleet?.stop();
    await Promise.all([server?.stop(), cluster?.stop()]);
  });

  /** Runs the fleet through its store `store` (keys under `namespace`); `command` reads Redis directly (`TIME`, the windows hash). */
  async function runOn(store: string, namespace: string, command: (args: string[]) => Promise<unknown>, mode: 'limiter' | 'reserve'): Promise<void> {
    // a run lasts well under a second: not across a minute's boundary on Redis's clock (handled if it is, by window)
    const [seconds, micros] = (await command(['TIME'])) as [string, string];
    const left = WINDOW_MS - ((Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)) % WINDOW_MS);
    if (left < 3_000) await sleep(left + 50);
    const key = `team:fleet-${process.pid}-${Date.now()}`;
    const run: SpendFleetRun = await fleet!.run({ store, key, windowMs: WINDOW_MS, limitNanos: LIMIT, callers: CALLERS, mode });
    expect(run.errors.slice(0, 5), `store errors (${run.errors.length})`).to.deep.equal([]);
    expect(run.local, 'holds decided on a local share (the store too slow)').to.equal(0);
    const hash = `${hashTag(namespace, 'sp', run.storeKey)}:${WINDOW_MS}`;
    for (const w of run.windows) {
      const used = Number(await command(['HGET', hash, String(w.window)]));
      const overshoot = Math.max(0, used - LIMIT);
      const share = (nanos: number): string => `${usd(nanos)}, ${((100 * nanos) / LIMIT).toFixed(3)} %`;
      console.log(
        `      window ${new Date(w.window).toISOString()}: ${w.calls} calls in ${run.ms} ms, ${w.refused} refused; used ${usd(used)} of $1` +
          ` → overshoot ${share(overshoot)}; charged above holds ${share(w.excessNanos)}`,
      );
      expect(used, 'used is what the calls cost: every reservation and adjustment counted once').to.equal(w.actualNanos);
      expect(overshoot, 'overshoot ≤ what callers charged above their holds').to.be.at.most(w.excessNanos);
    }
    const calls = run.windows.reduce((n, w) => n + w.calls, 0);
    expect(calls, 'the fleet spent').to.be.greaterThan(30);
  }

  const single = async (run: (command: (args: string[]) => Promise<unknown>) => Promise<void>): Promise<void> => {
    const client = createClient({ url: server!.url, disableOfflineQueue: true });
    client.on('error', () => undefined);
    await client.connect();
    try {
      await run((args) => client.sendCommand(args));
    } finally {
      await client.quit();
    }
  };

  it('SpendLimiter on one redis-server (node-redis): used ends ≤ $1 + what the calls charged above their holds, and equals what they cost', async () => {
    await single((command) => runOn('redis', 'fleet', command, 'limiter'));
  });

  it('SpendLimiter on a 3-master Redis Cluster (ioredis): the same', async () => {
    const nodes = cluster!.nodes;
    const cli = async (args: string[]): Promise<unknown> => {
      // TIME of any master; HGET on the master of the key's slot
      if (args[0] === 'TIME') return (await cluster!.cli(nodes[0]!.port, 'TIME')).split('\n');
      const owner = await cluster!.owner(await cluster!.slotOf(args[1]!));
      return cluster!.cli(owner.port, ...args);
    };
    await runOn('cluster', 'fleet-cluster', cli, 'limiter');
  });

  it("the store's protocol itself (reserve, then adjust), on one redis-server: the same", async () => {
    await single((command) => runOn('redis', 'fleet', command, 'reserve'));
  });
});
