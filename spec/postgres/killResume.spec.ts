/** The real-process kill spec on postgresJournal (spec/support/killContract.ts), on a PostgreSQL of its own. */
import { killContract } from '../support/killContract.js';
import { usePostgresServer } from '../support/postgresServer.js';

describe('durable runs across real processes (postgresJournal)', () => {
  const server = usePostgresServer();
  killContract('postgresJournal', () => ({ kind: 'postgres', connectionString: server().connectionString }));
});
