/**
 * The Redis stores' options are checked at construction, naming the option and the value: a
 * namespace is the keys' Cluster hash tag (`{namespace}`), so it cannot hold `}`; TTLs are whole
 * ms (Redis's PEXPIRE takes no fraction, and a fraction passed through would fail every script).
 */
import { expect } from 'chai';
import { firstValueFrom } from 'rxjs';
import { createClient } from 'redis';
import { RedisBreakerStore, RedisRateLimitStore, RedisSpendStore } from '../../src/redis/index.js';
import { requireProgram } from '../support/systemPackage.js';
import { startRedis, type RedisServer } from '../support/redisServer.js';
import { refusal } from '../support/refusal.js';

const client = { sendCommand: async (): Promise<unknown> => [0] };
const stores = {
  RedisBreakerStore: (o: object) => new RedisBreakerStore({ client, ...o }),
  RedisRateLimitStore: (o: object) => new RedisRateLimitStore({ client, ...o }),
  RedisSpendStore: (o: object) => new RedisSpendStore({ client, ...o }),
};

describe("the Redis stores' options", () => {
  for (const [store, make] of Object.entries(stores)) {
    describe(store, () => {
      it('a namespace holding "}" is refused, naming namespace and the value (its hash tag would be empty or cut short)', () => {
        for (const namespace of ['}prod', 'a}b', '}']) {
          const error = refusal(() => make({ namespace }));
          expect(error.option).to.equal('namespace');
          expect(error.message).to.include(JSON.stringify(namespace)).and.include('}');
        }
        expect(() => make({ namespace: 'agents-prod:{eu' }), '"{" alone is fine').to.not.throw();
      });

      it('nodeTtlMs must be whole ms (PEXPIRE takes no fraction), naming nodeTtlMs and the value', () => {
        for (const nodeTtlMs of [1.5, 0.5, 2 ** 31]) {
          const error = refusal(() => make({ nodeTtlMs }));
          expect(error.option).to.equal('nodeTtlMs');
          expect(error.message).to.include(String(nodeTtlMs));
        }
        expect(() => make({ nodeTtlMs: 3_000 })).to.not.throw();
      });
    });
  }
});

describe("the Redis stores' derived TTLs, on a real redis-server", function () {
  this.timeout(20_000);
  let server: RedisServer | undefined;
  let redis: ReturnType<typeof createClient> | undefined;
  before(async function () {
    const program = requireProgram(this, { name: 'redis-server', command: 'redis-server', install: 'apt-get install redis-server (.ci/run does)' });
    server = await startRedis(program);
    redis = createClient({ url: server.url, disableOfflineQueue: true });
    redis.on('error', () => undefined);
    await redis.connect();
  });
  after(async () => {
    await redis?.quit().catch(() => undefined);
    await server?.stop();
  });

  it('a fractional pollMs (no nodeTtlMs): the node TTL derived from it is whole ms, and every script runs', async () => {
    const store = new RedisBreakerStore({ client: redis!, namespace: 'ttl', pollMs: 333.3 });
    const [verdict] = await firstValueFrom(store.sync('a', ['model:x']));
    expect(verdict).to.include({ state: 'closed' });
    expect(await firstValueFrom(store.vote('a', 'model:x', { minNodes: 1, minFraction: 0, windowMs: 60_000 }, 1_000))).to.include({ state: 'open' });
    await store.close();
  });
});
