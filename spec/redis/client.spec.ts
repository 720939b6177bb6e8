/**
 * The Redis client layer both stores run their scripts through (src/redis/client.ts), on a real
 * redis-server: every command carries a deadline in Redis time, the very first one included — a
 * node that starts while Redis is stalled must not have its commands applied late.
 */
import { expect } from 'chai';
import { firstValueFrom, type Observable } from 'rxjs';
import { createClient } from 'redis';
import { RedisBreakerStore, RedisRateLimitStore } from '../../src/redis/index.js';
import { requireProgram } from '../support/systemPackage.js';
import { startRedis, type RedisServer } from '../support/redisServer.js';

const get = <T>(o: Observable<T>): Promise<T> => firstValueFrom(o);
/** What a call came to: 'answered', or the error's name. */
const outcome = (o: Observable<unknown>): Promise<string> =>
  get(o).then(
    () => 'answered',
    (e: unknown) => (e as Error).name,
  );
let unique = 0;
const fresh = (kind: string): string => `${kind}:${process.pid}-${++unique}`;

describe('the Redis client layer, on a real redis-server', function () {
  this.timeout(20_000);
  let server: RedisServer | undefined;
  const clients: { quit(): Promise<unknown> }[] = [];

  before(async function () {
    const program = requireProgram(this, { name: 'redis-server', command: 'redis-server', install: 'apt-get install redis-server (.ci/run does)' });
    server = await startRedis(program);
  });
  after(async () => {
    for (const c of clients.splice(0)) await c.quit().catch(() => undefined);
    await server?.stop();
  });

  const connect = async () => {
    const client = createClient({ url: server!.url, disableOfflineQueue: true });
    client.on('error', () => undefined);
    await client.connect();
    clients.push(client);
    return client;
  };

  it('commands sent before any reply (a node starting while Redis is stalled) carry a deadline too: neither store applies them late', async () => {
    const client = await connect();
    // new stores: no reply yet, so no estimate of Redis's clock
    const breakers = new RedisBreakerStore({ client, namespace: 'first', timeoutMs: 100 });
    const limits = new RedisRateLimitStore({ client, namespace: 'first', timeoutMs: 100 });
    const name = fresh('model');
    const key = fresh('openai');
    const reserve = (node: string) => limits.reserve({ key, node, maxWaitMs: 0, limits: [{ id: 'requests', limit: 1, periodMs: 60_000, cost: 1 }] });
    expect(await server!.command('CLIENT PAUSE 400 WRITE')).to.equal('+OK');
    const [fact, vote, reserved] = await Promise.all([
      outcome(breakers.fact('a', name, 60_000)),
      outcome(breakers.vote('a', name, { minNodes: 1, minFraction: 0, windowMs: 60_000 }, 60_000)),
      outcome(reserve('a')),
    ]);
    expect([fact, vote, reserved]).to.deep.equal(['ExpiredCommandError', 'ExpiredCommandError', 'ExpiredCommandError']);
    // nothing landed: the verdict is closed, and the limit's one request a minute is still there
    expect((await get(breakers.sync('b', [name])))[0]).to.include({ state: 'closed', reason: 'none' });
    expect(await get(reserve('b'))).to.include({ granted: true, waitMs: 0 });
    await breakers.close();
  });

  it('commands sent before any reply, Redis answering: they run (once each), and later ones go at once', async () => {
    const client = await connect();
    const breakers = new RedisBreakerStore({ client, namespace: 'first-ok' });
    const name = fresh('model');
    const [one, two] = await Promise.all([get(breakers.fact('a', name, 60_000)), get(breakers.sync('b', [name]))]);
    expect(one).to.include({ state: 'open', reason: 'rate_limit' });
    expect(two[0]!.state).to.be.oneOf(['closed', 'open']);
    expect(await get(breakers.fact('a', name, 1_000)), 'a shorter fact changes nothing').to.include({ generation: one.generation });
    await breakers.close();
  });
});
