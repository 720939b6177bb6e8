/**
 * A real PostgreSQL server for specs and the bench, as redisServer.ts starts redis-server:
 * Debian's `postgresql` (its programs in /usr/lib/postgresql/<version>/bin, or `postgres` and
 * `initdb` on PATH), a fresh cluster made by `initdb` in a temporary directory, `postgres` on
 * 127.0.0.1 and a free port (its socket in that directory), stopped by its pid and the directory
 * removed. Postgres refuses to run as root: under root (CI, this machine) both run as the
 * `postgres` user the Debian package creates, the directory theirs.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freePort, stopChild } from './redisServer.js';
import { requireProgram, type SystemProgram } from './systemPackage.js';

/** A running server. */
export interface PostgresServer {
  readonly port: number;
  /** `postgres://rxheal@127.0.0.1:<port>/postgres` (trust authentication on loopback: a spec's throwaway cluster). */
  readonly connectionString: string;
  /** A pool of it, ended by `stop()`. */
  pool(max?: number): pg.Pool;
  /** Ends the pools, stops the server (a fast shutdown) and removes its directory. */
  stop(): Promise<void>;
}

/** The folder of Debian's newest PostgreSQL programs, if installed. */
function debianBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin');
}

/** How a spec finds PostgreSQL (a suite skips with this notice where it is missing, outside CI). */
export function postgresProgram(): SystemProgram {
  const bin = debianBin();
  return {
    name: 'PostgreSQL (postgres, initdb)',
    ...(bin === undefined ? { command: 'postgres' } : { path: join(bin, 'postgres') }),
    install: 'apt-get install postgresql (.ci/run does)',
  };
}

/** Who runs the server: this process's user, or `postgres` under root. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const [uid, gid] = ['-u', '-g'].map((flag) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim()));
    return { uid: uid!, gid: gid! };
  } catch {
    throw new Error('PostgreSQL refuses to run as root, and there is no "postgres" user to run it as (apt-get install postgresql makes one)');
  }
}

/** Starts a server: `program` is the `postgres` path `requireProgram` found (`initdb` beside it). `fsync` off for specs that only need SQL. */
export async function startPostgres(program: string, options: { readonly fsync?: boolean } = {}): Promise<PostgresServer> {
  const bin = join(program, '..');
  const initdb = existsSync(join(bin, 'initdb')) ? join(bin, 'initdb') : 'initdb';
  const user = runAs();
  const dir = mkdtempSync(join(tmpdir(), 'rxheal-postgres-'));
  if (user !== undefined) chownSync(dir, user.uid, user.gid);
  const data = join(dir, 'data');
  execFileSync(initdb, ['-D', data, '-U', 'rxheal', '--auth=trust', '-E', 'UTF8', '--no-locale', '--no-sync'], { stdio: 'ignore', ...user });
  const port = await freePort();
  const settings = ['-c', `fsync=${options.fsync === false ? 'off' : 'on'}`, '-c', 'max_connections=50', '-c', 'shared_buffers=16MB'];
  const child: ChildProcess = spawn(program, ['-D', data, '-h', '127.0.0.1', '-p', String(port), '-k', dir, ...settings], { stdio: 'ignore', ...user });
  const connectionString = `postgres://rxheal@127.0.0.1:${port}/postgres`;
  for (let i = 0; ; i++) {
    const client = new pg.Client({ connectionString });
    try {
      await client.connect();
      await client.end();
      break;
    } catch {
      await client.end().catch(() => undefined);
      if (i > 200 || child.exitCode !== null) throw new Error(`postgres did not start on port ${port}`);
      await sleep(50);
    }
  }
  const pools: pg.Pool[] = [];
  return {
    port,
    connectionString,
    pool(max = 4) {
      const pool = new pg.Pool({ connectionString, max });
      pool.on('error', () => undefined);
      pools.push(pool);
      return pool;
    },
    async stop() {
      for (const pool of pools.splice(0)) await pool.end().catch(() => undefined);
      await stopChild(child, 'SIGINT');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** In a describe: a server of its own before its cases (skipped with a notice where PostgreSQL is missing, outside CI), stopped after them. */
export function usePostgresServer(options: { readonly fsync?: boolean } = {}): () => PostgresServer {
  let server: PostgresServer | undefined;
  before(async function () {
    const program = requireProgram(this, postgresProgram());
    this.timeout(60_000);
    server = await startPostgres(program, options);
  });
  after(async () => {
    await server?.stop();
  });
  return () => server!;
}
