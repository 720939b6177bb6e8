/**
 * `postgresJournal`: the run journal on Postgres, the rules of `memoryJournal` (the reference
 * model, `src/core/journal/memoryJournal.ts`) in SQL, through any `pg` pool or client.
 *
 * One table of entries, `(run_id, seq)` its primary key — the optimistic lock: two writers can
 * never both write a seq — and the runs' leases beside it, one row per run (`<table>_lease`:
 * holder, generation, until, released). The lease is a row on the database's own clock
 * (`clock_timestamp()`), not an advisory lock: an advisory lock belongs to one connection, and a
 * pool hands each query whichever connection is free (and a connection lost would free it while
 * its holder runs on); a row survives connections, pools and restarts, and every process reads
 * one clock.
 *
 * A claim takes the lease in one statement (an upsert that only takes a free, lapsed, released or
 * the holder's own lease, counting up the generation), then reads the entries in a second one: an
 * append is an `INSERT … SELECT` from the lease row of the session's generation `FOR SHARE`, so
 * an append under way holds the row until it commits, the claim's upsert waits for it, and the
 * entries read after the claim include it; an append after the claim finds no row of its
 * generation and writes nothing.
 *
 * @module
 */
import { InvalidOptionError } from '../core/errors/errors.js';
import { Bool, check, validateOptions } from '../core/errors/options.js';
import { JournalCorruptError, RunLockedError } from '../core/journal/errors.js';
import { parseRecord, type JournalClaim, type JournalData, type JournalEntry, type JournalStore } from '../core/journal/journal.js';
import { journalStore, type Grant } from '../core/journal/session.js';
import { abortable } from '../core/model/abortable.js';
import { durableJournal } from '../sources/durableJournal.js';

/**
 * What the journal needs of `pg`: `query(text, values)` resolving with `rows` and `rowCount` — a
 * `pg.Pool` (`new Pool({ connectionString })`), or one `pg.Client`, connected.
 *
 * @example
 * ```ts
 * import pg from 'pg';
 * const pool: PostgresPoolLike = new pg.Pool({ connectionString: 'postgres://app@127.0.0.1:5432/app' });
 * ```
 */
export interface PostgresPoolLike {
  query(text: string, values?: unknown[]): Promise<{ readonly rows: readonly unknown[]; readonly rowCount: number | null }>;
}

/**
 * Options of {@link postgresJournal}.
 *
 * @example
 * ```ts
 * const options: PostgresJournalOptions = { table: 'agent_journal', createTables: false };
 * ```
 */
export interface PostgresJournalOptions {
  /** The entries' table (the leases are `<table>_lease`), as an unquoted name on the search path. Defaults to `'rxheal_journal'`. */
  readonly table?: string;
  /** Create both tables (`CREATE TABLE IF NOT EXISTS`) before the first operation. Defaults to true; false where a migration made them. */
  readonly createTables?: boolean;
}

const Table = check(
  'a table name of 1 to 50 characters: lower-case letters, digits and "_", not starting with a digit',
  (u): u is string => typeof u === 'string' && /^[a-z_][a-z0-9_]{0,49}$/.test(u),
);

/** Errors Postgres gives two sessions creating one table at once — duplicate table, duplicate type (the table's row type), unique violation in the catalog: it exists. */
const RACED_CREATE = new Set<unknown>(['42P07', '42710', '23505']);

const code = (error: unknown): unknown => (error as { code?: unknown } | undefined)?.code;

/**
 * The tables `postgresJournal` uses, as SQL (what `createTables` runs; for a migration of your own).
 *
 * @example
 * ```ts
 * console.log(postgresJournalSchema('agent_journal'));
 * ```
 */
export function postgresJournalSchema(table = 'rxheal_journal'): string {
  if (!Table.is(table)) throw new InvalidOptionError('postgresJournalSchema', 'table', table, Table.name);
  return [
    `CREATE TABLE IF NOT EXISTS ${table} (run_id text NOT NULL, seq integer NOT NULL, data json NOT NULL, PRIMARY KEY (run_id, seq))`,
    `CREATE TABLE IF NOT EXISTS ${table}_lease (run_id text PRIMARY KEY, holder text NOT NULL, generation bigint NOT NULL, until timestamptz NOT NULL, released boolean NOT NULL)`,
  ].join(';\n');
}

/**
 * The run journal on Postgres (≥ 12) through `pg` (an optional peer dependency: `npm install
 * pg`): one table of entries keyed `(run_id, seq)` and a lease row per run on the database's
 * clock. An append is acknowledged once its `INSERT` committed: as durable as the server makes a
 * commit (`synchronous_commit`, the default `on`: flushed to the WAL).
 *
 * @example
 * ```ts
 * import pg from 'pg';
 * import { firstValueFrom } from 'rxjs';
 * import { postgresJournal } from 'rxheal/postgres';
 *
 * const journal = postgresJournal(new pg.Pool({ connectionString: process.env.DATABASE_URL }));
 * const session = await firstValueFrom(journal.claim({ runId: 'order-7421', holder: `worker-${process.pid}`, leaseMs: 30_000 }));
 * await firstValueFrom(session.append({ v: 1, type: 'start' }));
 * ```
 */
export function postgresJournal(pool: PostgresPoolLike, options?: PostgresJournalOptions): JournalStore {
  if (typeof pool !== 'object' || pool === null || typeof (pool as { query?: unknown }).query !== 'function')
    throw new InvalidOptionError(
      'postgresJournal',
      'pool',
      pool,
      `a pg Pool or Client: an object with query(text, values) (${typeof pool === 'object' && pool !== null ? 'it has no query function' : 'it is required'})`,
    );
  const o = validateOptions('postgresJournal', { table: Table, createTables: Bool }, options);
  const table = o.table ?? 'rxheal_journal';
  const leases = `${table}_lease`;
  let ready: Promise<void> | undefined;
  const tables = (): Promise<void> => {
    if (o.createTables === false) return Promise.resolve();
    ready ??= (async () => {
      for (const statement of postgresJournalSchema(table).split(';\n'))
        await pool.query(statement).catch((error: unknown) => {
          if (!RACED_CREATE.has(code(error))) throw error;
        });
    })().catch((error: unknown) => {
      ready = undefined;
      throw error;
    });
    return ready;
  };
  const query = async <R>(text: string, values: unknown[]): Promise<{ rows: R[]; rowCount: number }> => {
    await tables();
    const result = await pool.query(text, values);
    return { rows: result.rows as R[], rowCount: result.rowCount ?? 0 };
  };
  const where = (runId: string): string => `${table} (run ${JSON.stringify(runId)})`;

  const entries = async (runId: string): Promise<JournalEntry[]> => {
    const { rows } = await query<{ seq: number; data: string }>(`SELECT seq, data::text AS data FROM ${table} WHERE run_id = $1 ORDER BY seq`, [runId]);
    return rows.map((row, i) => {
      if (row.seq !== i) throw new JournalCorruptError('postgres', where(runId), `seq ${row.seq} where ${i} was next`, { seq: i });
      const data = parseRecord(row.data);
      if (typeof data === 'string') throw new JournalCorruptError('postgres', where(runId), `the record is ${data}`, { seq: i });
      return { seq: i, data };
    });
  };
  const holderOf = async (runId: string): Promise<{ holder?: string; until?: number; left?: number }> => {
    const { rows } = await query<{ holder: string; until: number; left: number }>(
      `SELECT holder, extract(epoch FROM until) * 1000 AS until, extract(epoch FROM until - clock_timestamp()) * 1000 AS left FROM ${leases} WHERE run_id = $1`,
      [runId],
    );
    const row = rows[0];
    return row === undefined ? {} : { holder: row.holder, until: Number(row.until), left: Number(row.left) };
  };
  const taken = async (runId: string): Promise<RunLockedError> => {
    const { holder } = await holderOf(runId);
    return new RunLockedError(runId, 'taken', holder === undefined ? {} : { holder });
  };

  const grant = (claim: JournalClaim, generation: string, first: JournalEntry[], firstWritten = false): Grant => {
    const own = async (text: string, values: unknown[]): Promise<void> => {
      if ((await query(text, values)).rowCount === 0) throw await taken(claim.runId);
    };
    const append = async (seq: number, text: string): Promise<void> => {
      try {
        await own(`INSERT INTO ${table} (run_id, seq, data) SELECT $1, $2, $3::json FROM ${leases} WHERE run_id = $1 AND generation = $4 FOR SHARE`, [
          claim.runId,
          seq,
          text,
          generation,
        ]);
      } catch (error) {
        if (code(error) !== '23505') throw error;
        throw new JournalCorruptError('postgres', where(claim.runId), `seq ${seq}, which this session writes next, is already there`, { seq });
      }
    };
    // the last record and the release in one statement: the UPDATE takes the lease row (under this session's generation), the INSERT writes only if it did
    const finish = async (seq: number, text: string): Promise<void> => {
      try {
        await own(
          `WITH freed AS (UPDATE ${leases} SET released = true WHERE run_id = $1 AND generation = $4 RETURNING run_id)
           INSERT INTO ${table} (run_id, seq, data) SELECT run_id, $2, $3::json FROM freed`,
          [claim.runId, seq, text, generation],
        );
      } catch (error) {
        if (code(error) !== '23505') throw error;
        throw new JournalCorruptError('postgres', where(claim.runId), `seq ${seq}, which this session writes next, is already there`, { seq });
      }
    };
    return {
      entries: first,
      firstWritten,
      append: (seq, text) => abortable(() => append(seq, text)),
      finish: (seq, text) => abortable(() => finish(seq, text)),
      renew: () =>
        abortable(() =>
          own(`UPDATE ${leases} SET until = clock_timestamp() + $3 * interval '1 millisecond' WHERE run_id = $1 AND generation = $2`, [
            claim.runId,
            generation,
            claim.leaseMs,
          ]),
        ),
      release: () => abortable(() => own(`UPDATE ${leases} SET released = true WHERE run_id = $1 AND generation = $2`, [claim.runId, generation])),
    };
  };

  const claimSql = `INSERT INTO ${leases} AS l (run_id, holder, generation, until, released)
         VALUES ($1, $2, 1, clock_timestamp() + $3 * interval '1 millisecond', false)
         ON CONFLICT (run_id) DO UPDATE SET holder = EXCLUDED.holder, generation = l.generation + 1, until = EXCLUDED.until, released = false
         WHERE l.released OR l.until <= clock_timestamp() OR l.holder = EXCLUDED.holder
         RETURNING generation::text AS generation`;
  // with a first record: written as seq 0 in the same statement where the claim won; a run that has a seq 0 keeps it (and is read back after)
  const claimWithFirstSql = `WITH l AS (${claimSql}),
         first AS (INSERT INTO ${table} (run_id, seq, data) SELECT $1, 0, $4::json FROM l ON CONFLICT (run_id, seq) DO NOTHING RETURNING seq)
         SELECT generation, (SELECT count(*) FROM first)::int AS wrote FROM l`;

  const take = async (claim: JournalClaim, first?: string): Promise<Grant> => {
    for (;;) {
      const { rows } = await query<{ generation: string; wrote?: number }>(
        first === undefined ? claimSql : claimWithFirstSql,
        first === undefined ? [claim.runId, claim.holder, claim.leaseMs] : [claim.runId, claim.holder, claim.leaseMs, first],
      );
      const generation = rows[0]?.generation;
      // the first record written: the run held nothing (a seq 0 of its own would have kept it out), so it holds that record alone
      if (generation !== undefined && rows[0]!.wrote === 1) return grant(claim, generation, [{ seq: 0, data: JSON.parse(first!) as JournalData }], true);
      if (generation !== undefined) return grant(claim, generation, await entries(claim.runId));
      const lease = await holderOf(claim.runId);
      // lapsed between the two statements: take it now
      if (lease.left !== undefined && lease.left <= 0) continue;
      throw new RunLockedError(claim.runId, 'held', {
        ...(lease.holder === undefined ? {} : { holder: lease.holder }),
        ...(lease.until === undefined ? {} : { until: lease.until, retryAfterMs: Math.max(0, Math.ceil(lease.left!)) }),
      });
    }
  };

  // with the durable-run machinery: runAgent reaches it through the journal it is given
  return durableJournal(
    journalStore(
      'postgresJournal',
      (claim, first) => abortable(() => take(claim, first)),
      (runId) => abortable(() => entries(runId)),
    ),
  );
}
