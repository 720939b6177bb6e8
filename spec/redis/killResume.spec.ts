/** The real-process kill spec on redisJournal (node-redis; spec/support/killContract.ts), on a redis-server of its own. */
import { killContract } from '../support/killContract.js';
import { useRedisServer } from '../support/redisServer.js';

describe('durable runs across real processes (redisJournal)', () => {
  const { server } = useRedisServer();
  killContract('redisJournal', () => ({ kind: 'redis', url: server().url }));
});
