/**
 * redisJournal: the journal store contract (spec/support/journalContract.ts) on a real
 * redis-server through node-redis and ioredis, on a 3-master Redis Cluster through both cluster
 * clients (with a run's slot moved while it is written), and through Redis Sentinel; then what is
 * Redis's own — keys of the wrong type, a record that is not JSON, the TTL, one slot per run, the
 * refused client — and the lease across real processes on one server.
 */
import { expect } from 'chai';
import { firstValueFrom, lastValueFrom, type Observable } from 'rxjs';
import { Cluster, Redis } from 'ioredis';
import { createCluster, createSentinel } from 'redis';
import { setTimeout as sleep } from 'node:timers/promises';
import { redisJournal, type RedisClientLike } from '../../src/redis/index.js';
import { hashTag, keySlot } from '../../src/redis/keys.js';
import type { JournalStore } from '../../src/core/journal/journal.js';
import { corrupt, failure, freshRun, journalContract } from '../support/journalContract.js';
import { processContract } from '../support/journalProcesses.js';
import { ledgerProcessContract } from '../support/ledgerProcesses.js';
import { ledgerContract } from '../support/ledgerContract.js';
import { ioredisReady } from '../support/ioredisPair.js';
import { refusal } from '../support/refusal.js';
import { requireProgram } from '../support/systemPackage.js';
import { startRedis, type RedisServer } from '../support/redisServer.js';
import { startRedisCluster, type RedisClusterServers } from '../support/redisCluster.js';
import { startRedisSentinels, type RedisSentinels } from '../support/redisSentinel.js';

const get = <T>(o: Observable<T>): Promise<T> => firstValueFrom(o);
const done = (o: Observable<unknown>): Promise<unknown> => lastValueFrom(o, { defaultValue: undefined });
const redisServer = { name: 'redis-server', command: 'redis-server', install: 'apt-get install redis-server (.ci/run does)' };
const redisCli = { name: 'redis-cli', command: 'redis-cli', install: 'apt-get install redis-server (.ci/run does; it ships redis-cli)' };
const nodeRedis = async (url: string) => createClient(url);
const createClient = async (url: string) => {
  const { createClient: make } = await import('redis');
  const client = make({ url, disableOfflineQueue: true });
  client.on('error', () => undefined);
  await client.connect();
  return client;
};

/** Two views of one journal: two clients, as two processes have (closed by `closers`). */
async function views(
  connect: () => Promise<RedisClientLike & { close?: () => unknown; quit?: () => unknown; disconnect?: () => unknown }>,
  namespace: string,
  closers: (() => unknown)[],
) {
  const [one, two] = [await connect(), await connect()];
  for (const c of [one, two]) closers.push(() => (c.disconnect ? c.disconnect() : c.quit ? c.quit() : c.close?.()));
  const [a, b] = [redisJournal(one, { namespace }), redisJournal(two, { namespace })];
  // the script's first command waits for a probe of Redis's clock: both views warmed up
  await Promise.all([get(a.read('warm-up')), get(b.read('warm-up'))]);
  return { a, b };
}

describe('redisJournal on a real redis-server', function () {
  this.timeout(30_000);
  let server: RedisServer | undefined;
  const closers: (() => unknown)[] = [];
  before(async function () {
    server = await startRedis(requireProgram(this, redisServer));
  });
  after(async () => {
    for (const close of closers.splice(0)) await close();
    await server?.stop();
  });

  journalContract('node-redis createClient: redisJournal', () => views(() => nodeRedis(server!.url), 'contract', closers));
  ledgerContract('node-redis createClient: redisJournal', () => views(() => nodeRedis(server!.url), 'ledger', closers));
  journalContract('ioredis Redis: redisJournal', () =>
    views(() => ioredisReady(new Redis(server!.url, { enableOfflineQueue: false })), 'contract-ioredis', closers),
  );

  describe('what is Redis’s own', () => {
    let client: Awaited<ReturnType<typeof createClient>>;
    let store: JournalStore;
    before(async () => {
      client = await createClient(server!.url);
      closers.push(() => client.quit());
      store = redisJournal(client, { namespace: 'own' });
    });
    const keys = (runId: string) => ({ lease: `${hashTag('own', 'j', runId)}:lease`, log: `${hashTag('own', 'j', runId)}:log` });

    it('a run is a list of JSON text and a lease hash, under one hash tag: one Cluster slot', async () => {
      const runId = freshRun();
      const session = await get(store.claim({ runId, holder: 'me', leaseMs: 60_000 }));
      await get(session.append({ v: 1 }));
      const { lease, log } = keys(runId);
      expect(lease).to.equal(`{own:j:${runId}}:lease`);
      expect(keySlot(lease)).to.equal(keySlot(log));
      expect(await client.lRange(log, 0, -1)).to.deep.equal(['{"v":1}']);
      expect(await client.hGet(lease, 'holder')).to.equal('me');
      await done(session.release());
      expect(await client.hGet(lease, 'released')).to.equal('1');
    });

    it('a key of the wrong type, or a record that is not a JSON object, is a JournalCorruptError naming the key (and the seq)', async () => {
      const [wrongLog, wrongLease, notJson] = [freshRun(), freshRun(), freshRun()];
      await client.set(keys(wrongLog).log, 'a string');
      expect(corrupt(await failure(store.read(wrongLog)), keys(wrongLog).log).reason).to.equal('the key holds a string, not a list');
      await client.set(keys(wrongLease).lease, 'x');
      corrupt(await failure(store.claim({ runId: wrongLease, holder: 'me', leaseMs: 1000 })), keys(wrongLease).lease);
      await client.rPush(keys(notJson).log, ['{"v":1}', 'not json', '[1]']);
      const e = corrupt(await failure(store.claim({ runId: notJson, holder: 'me', leaseMs: 1000 })), keys(notJson).log);
      expect([e.seq, e.reason]).to.deep.equal([1, 'the record is not JSON']);
      expect(await client.get(keys(wrongLog).log), 'nothing written').to.equal('a string');
    });

    it('ttlMs: each write gives the run’s keys that long to live', async () => {
      const ttl = redisJournal(client, { namespace: 'own', ttlMs: 300 });
      const runId = freshRun();
      const session = await get(ttl.claim({ runId, holder: 'me', leaseMs: 60_000 }));
      await get(session.append({ v: 1 }));
      const pttl = await client.pTTL(keys(runId).log);
      expect(pttl).to.be.within(1, 300);
      await sleep(400);
      expect(await client.exists([keys(runId).lease, keys(runId).log])).to.equal(0);
      expect(await get(ttl.read(runId))).to.deep.equal([]);
      // the session's token is gone with its keys: it cannot write into a new run of the same id
      const next = await get(ttl.claim({ runId, holder: 'other', leaseMs: 60_000 }));
      expect(((await failure(session.append({ v: 'stale' }))) as Error).name).to.equal('RunLockedError');
      await done(next.release());
      expect(await client.pTTL(keys(runId).log), 'no TTL option: none set').to.equal(-2);
    });

    it('a client of no shape, or bad options, is refused naming what is missing', () => {
      expect(refusal(() => redisJournal({} as never)).message).to.include('it has neither sendCommand nor call');
      expect(refusal(() => redisJournal(undefined as never)).option).to.equal('client');
      expect(refusal(() => redisJournal(client, { namespace: 'a}b' })).option).to.equal('namespace');
      expect(refusal(() => redisJournal(client, { ttlMs: 1.5 })).option).to.equal('ttlMs');
      expect(refusal(() => redisJournal(client, { timeoutMs: 0 })).option).to.equal('timeoutMs');
      expect(refusal(() => redisJournal(client, { ttl: 1 } as never)).option).to.equal('ttl');
    });
  });

  processContract('redisJournal (node-redis)', () => ({ kind: 'redis', url: server!.url }));
  ledgerProcessContract('redisJournal (node-redis)', () => ({ kind: 'redis', url: server!.url }));
});

describe('redisJournal on a 3-master Redis Cluster', function () {
  this.timeout(60_000);
  let servers: RedisClusterServers | undefined;
  const closers: (() => unknown)[] = [];
  before(async function () {
    servers = await startRedisCluster(requireProgram(this, redisServer), requireProgram(this, redisCli), 3);
  });
  after(async () => {
    for (const close of closers.splice(0)) await close();
    await servers?.stop();
  });

  const nodeCluster = async () => {
    const client = createCluster({ rootNodes: servers!.nodes.map((n) => ({ url: n.url })), defaults: { disableOfflineQueue: true } });
    client.on('error', () => undefined);
    await client.connect();
    return client;
  };
  journalContract('node-redis createCluster: redisJournal', () => views(nodeCluster, 'cluster', closers));
  journalContract('ioredis Cluster: redisJournal', () =>
    views(
      () =>
        ioredisReady(
          new Cluster(
            servers!.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
            { enableOfflineQueue: false, redisOptions: { maxRetriesPerRequest: 1 } },
          ),
        ),
      'cluster-ioredis',
      closers,
    ),
  );

  it("a run's slot moved to another master between appends, and left half-migrated during one: every append lands once, in order", async () => {
    const client = await nodeCluster();
    closers.push(() => client.close());
    const store = redisJournal(client, { namespace: 'moving' });
    const runId = freshRun();
    const session = await get(store.claim({ runId, holder: 'me', leaseMs: 60_000 }));
    await get(session.append({ n: 0 }));
    const slot = keySlot(hashTag('moving', 'j', runId));
    const from = await servers!.owner(slot);
    const to = servers!.nodes.find((n) => n.id !== from.id)!;
    await servers!.moveSlot(slot, to, async () => {
      expect(await get(session.append({ n: 1 })), 'half-migrated').to.equal(1);
    });
    expect(await get(session.append({ n: 2 })), 'moved').to.equal(2);
    expect((await get(store.read(runId))).map((e) => e.data['n'])).to.deep.equal([0, 1, 2]);
    await done(session.release());
  });
});

describe('redisJournal through Redis Sentinel', function () {
  this.timeout(60_000);
  let sentinels: RedisSentinels | undefined;
  const closers: (() => unknown)[] = [];
  before(async function () {
    sentinels = await startRedisSentinels(requireProgram(this, redisServer), requireProgram(this, redisCli));
  });
  after(async () => {
    for (const close of closers.splice(0)) await close();
    await sentinels?.stop();
  });
  const nodes = () => sentinels!.sentinels.map((port) => ({ host: '127.0.0.1', port }));
  journalContract('node-redis createSentinel: redisJournal', () =>
    views(
      async () => {
        const client = createSentinel({ name: sentinels!.name, sentinelRootNodes: nodes() });
        client.on('error', () => undefined);
        await client.connect();
        return client;
      },
      'sentinel',
      closers,
    ),
  );
  journalContract('ioredis (sentinels): redisJournal', () =>
    views(
      () => ioredisReady(new Redis({ sentinels: nodes(), name: sentinels!.name, enableOfflineQueue: false, maxRetriesPerRequest: 1 })),
      'sentinel-ioredis',
      closers,
    ),
  );
});
