/**
 * The Redis stores take a client by its shape (src/redis/client.ts): node-redis's `createClient()`
 * (`sendCommand(args)`) and `createCluster()` (`sendCommand(firstKey, isReadonly, args)`), and
 * ioredis's `Redis` and `Cluster` (`call(command, args)`; their `sendCommand` takes a Command
 * object). A client of no usable shape is refused at construction, naming what it lacks. Each
 * shape runs the whole store contract on real servers: ioredis on one redis-server, node-redis's
 * and ioredis's cluster clients on a local 3-master Redis Cluster.
 */
import { expect } from 'chai';
import { firstValueFrom, forkJoin } from 'rxjs';
import { Cluster, Redis } from 'ioredis';
import { createCluster } from 'redis';
import { RedisBreakerStore, RedisRateLimitStore, RedisSpendStore } from '../../src/redis/index.js';
import { ioredisReady } from '../support/ioredisPair.js';
import { requireProgram } from '../support/systemPackage.js';
import { startRedis, type RedisServer } from '../support/redisServer.js';
import { startRedisCluster, type RedisClusterServers } from '../support/redisCluster.js';
import { contract } from '../support/storeContract.js';
import { spendStoreContract } from '../support/spendStoreContract.js';
import { keysOf } from '../support/redisKeys.js';
import { keySlot } from '../../src/redis/keys.js';
import { outageCases, type Outage } from '../support/outageCases.js';
import { ioredisPair } from '../support/ioredisPair.js';
import { refusal } from '../support/refusal.js';

const redisServer = { name: 'redis-server', command: 'redis-server', install: 'apt-get install redis-server (.ci/run does)' };
const redisCli = { name: 'redis-cli', command: 'redis-cli', install: 'apt-get install redis-server (.ci/run does; it ships redis-cli)' };

/** An ioredis connection, ready (no offline queue: a command while disconnected fails at once). */
function ioredis(url: string): Promise<Redis> {
  return ioredisReady(new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1 }));
}

/** A node-redis cluster client, connected (no offline queue). */
async function nodeRedisCluster(servers: RedisClusterServers) {
  const client = createCluster({ rootNodes: servers.nodes.map((n) => ({ url: n.url })), defaults: { disableOfflineQueue: true } });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/**
 * A rate-limit store that knows every master's clock (one estimate per master, each from a probe of
 * its own): reservations on 100 keys, whose slots spread over every master, until they all answer.
 * Without it, a contract case's first command to a master waits for that probe, and one cancelled
 * meanwhile is never sent.
 */
async function warmedUp(limits: RedisRateLimitStore): Promise<RedisRateLimitStore> {
  const reserve = (i: number) =>
    limits.reserve({ key: `warm-up:${i}`, node: 'warm-up', maxWaitMs: 0, limits: [{ id: 'requests', limit: 1_000, periodMs: 60_000, cost: 1 }] });
  for (let i = 0; i < 20; i++)
    if (
      await firstValueFrom(forkJoin(Array.from({ length: 100 }, (_, j) => reserve(j)))).then(
        () => true,
        () => false,
      )
    )
      break;
  return limits;
}

/** An ioredis Cluster client, ready. */
function ioredisCluster(servers: RedisClusterServers): Promise<Cluster> {
  return ioredisReady(
    new Cluster(
      servers.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
      { enableOfflineQueue: false, redisOptions: { maxRetriesPerRequest: 1 } },
    ),
  );
}

describe("the Redis stores' clients, by shape", () => {
  const stores = {
    RedisBreakerStore: (o: object) => new RedisBreakerStore(o as never),
    RedisRateLimitStore: (o: object) => new RedisRateLimitStore(o as never),
    RedisSpendStore: (o: object) => new RedisSpendStore(o as never),
  };
  for (const [store, make] of Object.entries(stores)) {
    it(`${store}: a client of no usable shape is refused at construction, naming client and what it lacks`, () => {
      const none = refusal(() => make({ client: { get: () => undefined } }));
      expect(none.option).to.equal('client');
      expect(none.message).to.include(store).and.include('neither sendCommand nor call');
      // ioredis before 5: sendCommand takes a Command object, and there is no call()
      const old = refusal(() => make({ client: { sendCommand: () => undefined, defineCommand: () => undefined } }));
      expect(old.option).to.equal('client');
      expect(old.message).to.include('no call()').and.include('ioredis 5');
      const missing = refusal(() => make({}));
      expect([missing.option, missing.message]).to.satisfy(([o, m]: [string, string]) => o === 'client' && m.includes('required'));
      for (const client of [
        { sendCommand: async () => [0] },
        { call: async () => [0] },
        { sendCommand: async () => [0], getSlotMaster: () => undefined },
        { sendCommand: async () => [0], getMasterNode: () => undefined },
      ])
        expect(() => make({ client })).to.not.throw();
    });
  }

  it('RedisBreakerStore: a subscriber of neither shape is refused naming subscriber (an ioredis one needs on and off for its message events)', () => {
    const client = { call: async () => [0] };
    const error = refusal(
      () => new RedisBreakerStore({ client, subscriber: { call: async () => 1, subscribe: async () => 1, unsubscribe: async () => 1 } as never }),
    );
    expect(error.option).to.equal('subscriber');
    expect(error.message).to.include('ioredis (call, subscribe, unsubscribe, on, off)');
  });

  describe('ioredis on a real redis-server', function () {
    this.timeout(30_000);
    let server: RedisServer | undefined;
    const open: Redis[] = [];
    const closers: (() => Promise<void>)[] = [];
    before(async function () {
      server = await startRedis(requireProgram(this, redisServer));
    });
    after(async () => {
      for (const close of closers.splice(0)) await close();
      for (const c of open.splice(0)) c.disconnect();
      await server?.stop();
    });

    contract(
      'ioredis Redis: RedisBreakerStore / RedisRateLimitStore',
      async () => {
        const [client, subscriber] = [await ioredis(server!.url), await ioredis(server!.url)];
        open.push(client, subscriber);
        const breakers = new RedisBreakerStore({ client, subscriber, namespace: 'ioredis' });
        closers.push(() => breakers.close());
        await firstValueFrom(breakers.sync('warm-up', ['warm-up']));
        await new Promise((resolve) => setTimeout(resolve, 50)); // SUBSCRIBE acknowledged
        return { breakers, limits: new RedisRateLimitStore({ client, namespace: 'ioredis' }) };
      },
      async () => undefined,
    );

    spendStoreContract(
      'ioredis Redis: RedisSpendStore',
      async () => {
        const client = await ioredis(server!.url);
        open.push(client);
        return new RedisSpendStore({ client, namespace: 'ioredis', timeoutMs: 10_000 });
      },
      async () => undefined,
    );

    outageCases(
      'ioredis Redis',
      () => ioredisPair(() => new Redis(server!.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1 })),
      () => ({
        pause: async (ms, mode) => void (await server!.command(`CLIENT PAUSE ${ms} ${mode}`)),
        restart: async () => {
          await server!.kill();
          await server!.restart();
        },
      }),
    );
  });

  describe('on a local 3-master Redis Cluster', function () {
    this.timeout(60_000);
    let servers: RedisClusterServers | undefined;
    const closers: (() => Promise<void>)[] = [];
    before(async function () {
      const server = requireProgram(this, redisServer);
      const cli = requireProgram(this, redisCli);
      servers = await startRedisCluster(server, cli, 3);
    });
    after(async () => {
      for (const close of closers.splice(0)) await close();
      await servers?.stop();
    });

    it('a sync on a cluster: one command per breaker (each its own slot), all sent at once — 1, 10, 1 000 breakers; their keys spread over every master', async () => {
      const client = createCluster({ rootNodes: servers!.nodes.map((n) => ({ url: n.url })), defaults: { disableOfflineQueue: true } });
      client.on('error', () => undefined);
      await client.connect();
      const sent: string[][] = [];
      let inFlight = 0;
      let mostInFlight = 0;
      const recording = {
        getSlotMaster: (slot: number) => client.getSlotMaster(slot),
        sendCommand: async (firstKey: string | undefined, isReadonly: boolean | undefined, args: string[]) => {
          sent.push(args);
          mostInFlight = Math.max(mostInFlight, ++inFlight);
          try {
            return await client.sendCommand(firstKey, isReadonly, args);
          } finally {
            inFlight--;
          }
        },
      };
      // a long deadline: this counts commands (a burst of 1 000 scripts can outlast the 100 ms default on a busy machine)
      const breakers = new RedisBreakerStore({ client: recording, namespace: 'trips', timeoutMs: 20_000 });
      closers.push(async () => {
        await breakers.close();
        await client.close();
      });
      // the script in every master's cache (each master learns it from its first EVAL)
      await firstValueFrom(
        breakers.sync(
          'n',
          Array.from({ length: 100 }, (_, i) => `warm-up:${i}`),
        ),
      );
      // each master's clock is its own: one probe of it (deadline 1, the script's only ARGV) per master
      const probes = sent.filter((args) => args[0] === 'EVALSHA' && args.length === 4 + Number(args[2]) && args[3 + Number(args[2])] === '1');
      expect(probes.length, 'one clock probe per master').to.equal(3);
      for (const n of [1, 10, 1000]) {
        const names = Array.from({ length: n }, (_, i) => `model:${n}:${i}`);
        sent.length = 0;
        mostInFlight = 0;
        const verdicts = await firstValueFrom(breakers.sync('n', names));
        expect(verdicts.map((v) => v.name)).to.deep.equal(names);
        expect(sent.length, `${n} breakers`).to.equal(n);
        expect(mostInFlight, 'sent at once, not one after another').to.equal(n);
      }
      // the 1 000 breakers' node sets, by master
      const owners = new Set<string>();
      for (let i = 0; i < 1000; i += 50) owners.add((await servers!.owner(await servers!.slotOf(`{trips:b:model%3A1000%3A${i}}:nodes`))).id);
      expect(owners.size, 'breakers on every master').to.equal(3);
    });

    contract(
      'node-redis createCluster: RedisBreakerStore / RedisRateLimitStore',
      async () => {
        const client = await nodeRedisCluster(servers!);
        const breakers = new RedisBreakerStore({ client, subscriber: client, namespace: 'node-redis-cluster' });
        closers.push(async () => {
          await breakers.close();
          await client.close();
        });
        await firstValueFrom(breakers.sync('warm-up', ['warm-up']));
        await new Promise((resolve) => setTimeout(resolve, 100)); // SUBSCRIBE acknowledged
        return { breakers, limits: await warmedUp(new RedisRateLimitStore({ client, namespace: 'node-redis-cluster' })) };
      },
      async () => undefined,
    );

    contract(
      'ioredis Cluster: RedisBreakerStore / RedisRateLimitStore',
      async () => {
        const [client, subscriber] = [await ioredisCluster(servers!), await ioredisCluster(servers!)];
        const breakers = new RedisBreakerStore({ client, subscriber, namespace: 'ioredis-cluster' });
        closers.push(async () => {
          await breakers.close();
          client.disconnect();
          subscriber.disconnect();
        });
        // ioredis connects to each master on its first command there; without an offline queue, a
        // second command sent while that connection opens waits until the client disconnects (seen
        // with 5.11): the case of a cancelled reservation would then miss it. Connect to every master first.
        // (the first commands may also come past their 100 ms deadline while connections open: until one answers)
        for (let i = 0; i < 20; i++)
          if (
            await firstValueFrom(
              breakers.sync(
                'warm-up',
                Array.from({ length: 100 }, (_, j) => `warm-up:${j}`),
              ),
            ).then(
              () => true,
              () => false,
            )
          )
            break;
        await new Promise((resolve) => setTimeout(resolve, 100)); // SUBSCRIBE acknowledged
        return { breakers, limits: await warmedUp(new RedisRateLimitStore({ client, namespace: 'ioredis-cluster' })) };
      },
      async () => undefined,
    );

    /** A spend store that knows every master's clock (a reservation of nothing on 100 keys, whose slots spread over every master, until they all answer). */
    async function warmedUpSpend(store: RedisSpendStore): Promise<RedisSpendStore> {
      const peek = (i: number) => store.reserve({ key: `warm-up:${i}`, node: 'warm-up', windowMs: 60_000, limitNanos: 1, nanos: 0 });
      for (let i = 0; i < 20; i++)
        if (
          await firstValueFrom(forkJoin(Array.from({ length: 100 }, (_, j) => peek(j)))).then(
            () => true,
            () => false,
          )
        )
          break;
      return store;
    }

    spendStoreContract(
      'node-redis createCluster: RedisSpendStore',
      async () => {
        const client = await nodeRedisCluster(servers!);
        closers.push(() => client.close());
        return warmedUpSpend(new RedisSpendStore({ client, namespace: 'node-redis-cluster', timeoutMs: 10_000 }));
      },
      async () => undefined,
    );

    spendStoreContract(
      'ioredis Cluster: RedisSpendStore',
      async () => {
        const client = await ioredisCluster(servers!);
        closers.push(async () => void client.disconnect());
        return warmedUpSpend(new RedisSpendStore({ client, namespace: 'ioredis-cluster', timeoutMs: 10_000 }));
      },
      async () => undefined,
    );

    it("RedisSpendStore on the cluster: every key of one operation in one slot (the key's hash tag), spend keys spread over every master", async () => {
      const client = await nodeRedisCluster(servers!);
      closers.push(() => client.close());
      const sent: string[][] = [];
      const recording = {
        getSlotMaster: (slot: number) => client.getSlotMaster(slot),
        sendCommand: (firstKey: string | undefined, isReadonly: boolean | undefined, args: string[]) => (
          sent.push(args),
          client.sendCommand(firstKey, isReadonly, args)
        ),
      };
      const store = await warmedUpSpend(new RedisSpendStore({ client: recording, namespace: 'spend-slots', timeoutMs: 10_000 }));
      sent.length = 0;
      const keys = Array.from({ length: 60 }, (_, i) => `team:${i}:{x}`);
      for (const key of keys) {
        const grant = await firstValueFrom(store.reserve({ key, node: 'n', windowMs: 60_000, limitNanos: 100, nanos: 40 }));
        await firstValueFrom(store.adjust({ key, window: grant.window, windowMs: 60_000, deltaNanos: -10 }));
      }
      const scripts = sent.filter((args) => args[0] === 'EVALSHA' || args[0] === 'EVAL');
      expect(scripts.length).to.be.at.least(120);
      for (const args of scripts) expect(new Set(keysOf(args).map(keySlot)).size, keysOf(args).join(' ')).to.equal(1);
      const owners = new Set<string>();
      for (const args of scripts.slice(0, 40)) owners.add((await servers!.owner(await servers!.slotOf(keysOf(args)[0]!))).id);
      expect(owners.size, 'spend keys on every master').to.equal(3);
    });

    // last: a restart leaves a master empty
    const outage = (): Outage => ({
      pause: async (ms, mode) => {
        for (const n of servers!.nodes) await servers!.cli(n.port, 'CLIENT', 'PAUSE', String(ms), mode);
      },
      restart: async (key) => servers!.restart(await servers!.owner(await servers!.slotOf(key))),
    });
    outageCases(
      'node-redis createCluster',
      async () => {
        const client = await nodeRedisCluster(servers!);
        return { client, subscriber: client, close: () => client.close() };
      },
      outage,
    );
    outageCases(
      'ioredis Cluster',
      () =>
        ioredisPair(
          () =>
            new Cluster(
              servers!.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
              { enableOfflineQueue: false, redisOptions: { maxRetriesPerRequest: 1 } },
            ),
        ),
      outage,
    );
  });
});
