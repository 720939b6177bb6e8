/**
 * `redisJournal`: the run journal on Redis, the rules of `memoryJournal` (the reference model,
 * `src/core/journal/memoryJournal.ts`) in one Lua script, leases on Redis `TIME`.
 *
 * Keys: one hash tag per run, `{ns:j:<runId>}` (`hashTag` in `./keys.ts`; a run id has none of
 * `%:{}`), so every key of a run is in one Redis Cluster slot and a fleet's runs spread over the
 * slots: `{ns:j:<runId>}:lease` (a hash: `token`, `holder`, `until`, `released`) and
 * `{ns:j:<runId>}:log` (a list of the records' JSON text, in order: `seq` is the index).
 *
 * Each claim writes a fresh random `token` into the lease (and, given a first record and an empty
 * log, appends it in the same script); an append, a renewal, a release and a finish (the last
 * record and the release together)
 * run only while the lease holds the session's token (a later claim replaced it: the session
 * lost the run) and an append only where the list is exactly as long as the session expects —
 * the optimistic lock. A token, not a counter: a run whose keys expired (`ttlMs`) and were claimed
 * anew never hands a former session's number to a new one. Every script reads each key before its
 * first write, so one sent again after a refusal midway (a slot being migrated: see `Script`) is
 * safe, and an append sent again after it was written finds its record there and is done.
 *
 * @module
 */
/// <reference types="node" />
import { randomBytes } from 'node:crypto';
import { asyncScheduler, map, type Observable, type SchedulerLike } from 'rxjs';
import { PositiveIntegerMs, PositiveNumber, Scheduler, validateOptions } from '../core/errors/options.js';
import { JournalCorruptError, RunLockedError } from '../core/journal/errors.js';
import { parseRecord, type JournalClaim, type JournalEntry, type JournalStore } from '../core/journal/journal.js';
import { journalStore, type Grant } from '../core/journal/session.js';
import { durableJournal } from '../sources/durableJournal.js';
import { redisStoreProps } from './breakerStore.js';
import { clientOption, num, Script, type RedisClientLike } from './client.js';
import { hashTag } from './keys.js';

const JOURNAL_SCRIPT = `
-- KEYS: the run's lease (a hash) and its log (a list); ARGV[2] the operation, ARGV[3] the TTL in ms (0: none)
local lease, log = KEYS[1], KEYS[2]
local op, ttl = ARGV[2], tonumber(ARGV[3])
local lt, gt = redis.call('TYPE', lease)['ok'], redis.call('TYPE', log)['ok']
if lt ~= 'none' and lt ~= 'hash' then return {now, 'wrongtype', 1, lt} end
if gt ~= 'none' and gt ~= 'list' then return {now, 'wrongtype', 2, gt} end
-- the TTL from this write on: the lease, and the log where it exists (types were read first: no read after a write)
local function keep(logExists)
  if ttl > 0 then
    redis.call('PEXPIRE', lease, ttl)
    if logExists then redis.call('PEXPIRE', log, ttl) end
  end
end
if op == 'read' then return {now, 'ok', redis.call('LRANGE', log, 0, -1)} end
local h = redis.call('HMGET', lease, 'token', 'holder', 'until', 'released')
if op == 'claim' then
  -- ARGV[7], where given: a first record, appended when the log is empty (the reply's last field says whether it was)
  local token, holder, leaseMs, first = ARGV[4], ARGV[5], tonumber(ARGV[6]), ARGV[7]
  local entries = redis.call('LRANGE', log, 0, -1)
  -- this claim, sent again after it was applied: its lease is written first, so the token tells
  if h[1] == token then return {now, 'ok', entries, (first ~= nil and #entries == 1 and entries[1] == first) and 1 or 0} end
  local untilT = tonumber(h[3]) or 0
  if h[4] ~= '1' and untilT > now and h[2] ~= holder then return {now, 'held', h[2] or '', untilT, untilT - now} end
  redis.call('HSET', lease, 'token', token, 'holder', holder, 'until', now + leaseMs, 'released', '0')
  local wrote = 0
  if first ~= nil and #entries == 0 then
    redis.call('RPUSH', log, first)
    entries, wrote = {first}, 1
  end
  keep(gt == 'list' or wrote == 1)
  return {now, 'ok', entries, wrote}
end
-- the session's own operations: only under its token
if h[1] ~= ARGV[4] then return {now, 'taken', h[2] or ''} end
if op == 'append' or op == 'finish' then
  -- finish: the record and the release in one
  local seq, record = tonumber(ARGV[5]), ARGV[6]
  local n = redis.call('LLEN', log)
  local sent = n == seq + 1 and redis.call('LINDEX', log, -1) == record
  if not sent then
    if n ~= seq then return {now, 'conflict', n} end
    redis.call('RPUSH', log, record)
  end
  if op == 'finish' then redis.call('HSET', lease, 'released', '1') end
  if not sent or op == 'finish' then keep(true) end
  return {now, 'ok'}
end
if op == 'renew' then
  redis.call('HSET', lease, 'until', now + tonumber(ARGV[5]))
  keep(gt == 'list')
  return {now, 'ok'}
end
redis.call('HSET', lease, 'released', '1')
return {now, 'ok'}
`;

/**
 * Options of {@link redisJournal}.
 *
 * @example
 * ```ts
 * const options: RedisJournalOptions = { namespace: 'agents-prod', ttlMs: 7 * 86_400_000 };
 * ```
 */
export interface RedisJournalOptions {
  /** Prefix (and part of each run's Cluster hash tag: no `}` in it) of every key. Defaults to `'rxheal'`. */
  readonly namespace?: string;
  /** Bound on every call, in ms: a command reaching Redis later has no effect. Defaults to 5000. */
  readonly timeoutMs?: number;
  /** A run's keys expire this long after its last write (a claim, an append, a renewal), in whole ms. Defaults to none: kept until deleted. */
  readonly ttlMs?: number;
  /** The local clock, only to estimate Redis's for command deadlines. Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
}

const props = { namespace: redisStoreProps.namespace, timeoutMs: PositiveNumber, ttlMs: PositiveIntegerMs, scheduler: Scheduler };

/**
 * The run journal on Redis (≥ 5, or Valkey): a list per run and its lease, each operation one
 * Lua script on Redis time — one server, a Redis Cluster (one hash tag per run) or Sentinel,
 * through node-redis or ioredis (clients by shape, {@link RedisClientLike}; make them without an
 * offline queue). An append is acknowledged once Redis has it: as durable as the server's own
 * persistence (`appendonly yes` with `appendfsync always` for the file journal's guarantee; a
 * replica promoted by Sentinel may lack the last acknowledged writes — `WAIT` is not issued).
 *
 * @example
 * ```ts
 * import { createClient } from 'redis';
 * import { firstValueFrom } from 'rxjs';
 * import { redisJournal } from 'rxheal/redis';
 *
 * const client = await createClient({ url: 'redis://127.0.0.1:6379', disableOfflineQueue: true }).on('error', () => {}).connect();
 * const journal = redisJournal(client, { ttlMs: 7 * 86_400_000 });
 * const session = await firstValueFrom(journal.claim({ runId: 'order-7421', holder: `worker-${process.pid}`, leaseMs: 30_000 }));
 * await firstValueFrom(session.append({ v: 1, type: 'start' }));
 * ```
 */
export function redisJournal(client: RedisClientLike, options?: RedisJournalOptions): JournalStore {
  const commands = clientOption('redisJournal', client);
  const o = validateOptions('redisJournal', props, options);
  const namespace = o.namespace ?? 'rxheal';
  const ttl = o.ttlMs ?? 0;
  const script = new Script(commands, JOURNAL_SCRIPT, o.scheduler ?? asyncScheduler, o.timeoutMs ?? 5_000);
  const keysOf = (runId: string): [string, string] => {
    const tag = hashTag(namespace, 'j', runId);
    return [`${tag}:lease`, `${tag}:log`];
  };
  const run = (runId: string, args: readonly (string | number)[]): Observable<unknown[]> => {
    const keys = keysOf(runId);
    return script.run(keys, [args[0]!, ttl, ...args.slice(1)]).pipe(
      map((reply) => {
        if (reply[0] === 'wrongtype')
          throw new JournalCorruptError('redis', keys[num(reply[1]) - 1]!, `the key holds a ${String(reply[2])}, not a ${reply[1] === 1 ? 'hash' : 'list'}`);
        return reply;
      }),
    );
  };
  const entriesOf = (runId: string, records: unknown): JournalEntry[] =>
    (records as unknown[]).map((text, seq) => {
      const data = parseRecord(String(text));
      if (typeof data === 'string') throw new JournalCorruptError('redis', keysOf(runId)[1], `the record is ${data}`, { seq });
      return { seq, data };
    });

  const grant = (claim: JournalClaim, token: string, entries: JournalEntry[], firstWritten: boolean): Grant => {
    const own = (args: readonly (string | number)[]): Observable<void> =>
      run(claim.runId, args).pipe(
        map((reply) => {
          if (reply[0] === 'taken') throw new RunLockedError(claim.runId, 'taken', reply[1] ? { holder: String(reply[1]) } : {});
          if (reply[0] === 'conflict')
            throw new JournalCorruptError(
              'redis',
              keysOf(claim.runId)[1],
              `the list holds ${String(reply[1])} records where this session wrote ${String(args[2])}`,
            );
        }),
      );
    return {
      entries,
      firstWritten,
      append: (seq, text) => own(['append', token, seq, text]),
      renew: () => own(['renew', token, Math.ceil(claim.leaseMs)]),
      release: () => own(['release', token]),
      finish: (seq, text) => own(['finish', token, seq, text]),
    };
  };

  const take = (c: JournalClaim, first?: string): Observable<Grant> => {
    const token = randomBytes(12).toString('hex');
    return run(c.runId, ['claim', token, c.holder, Math.ceil(c.leaseMs), ...(first === undefined ? [] : [first])]).pipe(
      map((reply) => {
        if (reply[0] === 'held') {
          const holder = String(reply[1]);
          const until = num(reply[2]);
          throw new RunLockedError(c.runId, 'held', { ...(holder === '' ? {} : { holder }), until, retryAfterMs: num(reply[3]) });
        }
        return grant(c, token, entriesOf(c.runId, reply[1]), num(reply[2]) === 1);
      }),
    );
  };
  // with the durable-run machinery: runAgent reaches it through the journal it is given
  return durableJournal(journalStore('redisJournal', take, (runId) => run(runId, ['read']).pipe(map((reply) => entriesOf(runId, reply[1])))));
}
