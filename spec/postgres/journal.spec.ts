/**
 * postgresJournal on a real PostgreSQL (Debian's, started here: spec/support/postgresServer.ts):
 * the journal store contract (spec/support/journalContract.ts) through two pools, then what is
 * Postgres's own — the tables, a record or a seq that is not the journal's, two stores creating
 * the tables at once, the refused pool — and the lease across real processes.
 */
import { expect } from 'chai';
import { firstValueFrom, lastValueFrom, type Observable } from 'rxjs';
import pg from 'pg';
import { postgresJournal, postgresJournalSchema } from '../../src/postgres/index.js';
import type { JournalStore } from '../../src/core/journal/journal.js';
import { corrupt, failure, freshRun, journalContract } from '../support/journalContract.js';
import { ledgerContract } from '../support/ledgerContract.js';
import { processContract } from '../support/journalProcesses.js';
import { ledgerProcessContract } from '../support/ledgerProcesses.js';
import { refusal } from '../support/refusal.js';
import { usePostgresServer } from '../support/postgresServer.js';

const get = <T>(o: Observable<T>): Promise<T> => firstValueFrom(o);
const done = (o: Observable<unknown>): Promise<unknown> => lastValueFrom(o, { defaultValue: undefined });

describe('postgresJournal on a real PostgreSQL', function () {
  this.timeout(30_000);
  const server = usePostgresServer();

  journalContract('postgresJournal', async () => ({ a: postgresJournal(server().pool()), b: postgresJournal(server().pool()) }));
  ledgerContract('postgresJournal', async () => ({ a: postgresJournal(server().pool()), b: postgresJournal(server().pool()) }));

  describe('what is Postgres’s own', () => {
    let pool: pg.Pool;
    let store: JournalStore;
    before(() => {
      pool = server().pool();
      store = postgresJournal(pool, { table: 'own' });
    });

    it('one row per entry, (run_id, seq) its key; one lease row per run', async () => {
      const runId = freshRun();
      const session = await get(store.claim({ runId, holder: 'me', leaseMs: 60_000 }));
      await get(session.append({ v: 1, z: 2 }));
      await get(session.append({ v: 2 }));
      const { rows } = await pool.query('SELECT seq, data::text AS data FROM own WHERE run_id = $1 ORDER BY seq', [runId]);
      expect(rows).to.deep.equal([
        { seq: 0, data: '{"v":1,"z":2}' },
        { seq: 1, data: '{"v":2}' },
      ]);
      const lease = await pool.query('SELECT holder, generation::int AS generation, released FROM own_lease WHERE run_id = $1', [runId]);
      expect(lease.rows).to.deep.equal([{ holder: 'me', generation: 1, released: false }]);
      const dup = await pool.query('INSERT INTO own (run_id, seq, data) VALUES ($1, 1, $2)', [runId, '{}']).catch((e: { code: string }) => e.code);
      expect(dup, 'the key refuses a second seq 1').to.equal('23505');
      await done(session.release());
    });

    it('a record that is not a JSON object, or a gap in the seqs, is a JournalCorruptError naming the table, the run and the seq', async () => {
      const [notObject, gap] = [freshRun(), freshRun()];
      await pool.query(`INSERT INTO own (run_id, seq, data) VALUES ($1, 0, '{"v":1}'), ($1, 1, '[1,2]')`, [notObject]);
      const e = corrupt(await failure(store.read(notObject)), `own (run "${notObject}")`);
      expect([e.seq, e.reason, e.store]).to.deep.equal([1, 'the record is not a JSON object', 'postgres']);
      await pool.query(`INSERT INTO own (run_id, seq, data) VALUES ($1, 0, '{}'), ($1, 2, '{}')`, [gap]);
      expect(corrupt(await failure(store.claim({ runId: gap, holder: 'me', leaseMs: 1000 })), gap).reason).to.equal('seq 2 where 1 was next');
    });

    it('stores creating the tables at once all succeed; createTables: false uses tables a migration made', async () => {
      const fresh = 'raced';
      const stores = Array.from({ length: 6 }, () => postgresJournal(server().pool(1), { table: fresh }));
      await Promise.all(stores.map((s) => get(s.read(freshRun()))));
      const premade = 'premade';
      for (const statement of postgresJournalSchema(premade).split(';\n')) await pool.query(statement);
      const migrated = postgresJournal(pool, { table: premade, createTables: false });
      const session = await get(migrated.claim({ runId: freshRun(), holder: 'me', leaseMs: 1000 }));
      expect(await get(session.append({ ok: true }))).to.equal(0);
      const missing = postgresJournal(pool, { table: 'never_made', createTables: false });
      expect(((await failure(missing.read(freshRun()))) as { code?: string }).code, 'undefined_table').to.equal('42P01');
    });

    it('a pool of no shape, or bad options, is refused naming what is missing', () => {
      expect(refusal(() => postgresJournal({} as never)).message).to.include('it has no query function');
      expect(refusal(() => postgresJournal(undefined as never)).option).to.equal('pool');
      expect(refusal(() => postgresJournal(pool, { table: 'Bad-Name' })).option).to.equal('table');
      expect(refusal(() => postgresJournal(pool, { table: 'x; DROP TABLE own' })).option).to.equal('table');
      expect(refusal(() => postgresJournal(pool, { createTables: 'yes' } as never)).option).to.equal('createTables');
      // a pg Client fits as well as a Pool
      expect(() => postgresJournal(new pg.Client())).to.not.throw();
    });
  });

  processContract('postgresJournal', () => ({ kind: 'postgres', connectionString: server().connectionString }));
  ledgerProcessContract('postgresJournal', () => ({ kind: 'postgres', connectionString: server().connectionString }));
});
