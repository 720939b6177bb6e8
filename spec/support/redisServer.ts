/**
 * A real `redis-server` for specs (and the bench and the fleet demo): started on a free loopback
 * port with a temporary directory and no persistence, stopped by its pid, restartable on the same
 * port (empty, as a restarted cache would be).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from 'redis';
import { requireProgram } from './systemPackage.js';

/** A running redis-server. */
export interface RedisServer {
  readonly port: number;
  readonly url: string;
  readonly pid: number;
  /** Sends one inline command (e.g. `CLIENT PAUSE 1500 ALL`) over a fresh connection; resolves with the first reply line. */
  command(line: string): Promise<string>;
  /** Kills it (SIGKILL by default: a crash) and waits for it to exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port (empty). */
  restart(): Promise<void>;
  /** Stops it for good and removes its directory. */
  stop(): Promise<void>;
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function inline(port: number, line: string, timeoutMs = 1000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    let data = '';
    const timer = globalThis.setTimeout(() => {
      socket.destroy();
      reject(new Error(`redis ${port}: no reply to ${line}`));
    }, timeoutMs);
    socket.on('connect', () => socket.write(`${line}\r\n`));
    socket.on('data', (chunk) => {
      data += chunk.toString('utf8');
      const end = data.indexOf('\r\n');
      if (end >= 0) {
        globalThis.clearTimeout(timer);
        socket.end();
        resolve(data.slice(0, end));
      }
    });
    socket.on('error', (error) => {
      globalThis.clearTimeout(timer);
      reject(error);
    });
  });
}

/** Sends `signal` to a child process (a redis-server, a sentinel) and waits for it to exit; one that has exited already is left alone. */
export async function stopChild(c: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (c.exitCode !== null || c.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
  process.kill(c.pid!, signal);
  await exited;
}

/** Starts `redis-server` (the path `requireProgram` found) on a free port. */
export async function startRedis(program: string): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'rxheal-redis-'));
  let child: ChildProcess;
  const launch = async (): Promise<void> => {
    child = spawn(program, ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
    for (let i = 0; i < 200; i++) {
      try {
        if ((await inline(port, 'PING', 200)) === '+PONG') return;
      } catch {
        // not listening yet
      }
      await sleep(25);
    }
    throw new Error(`redis-server did not start on port ${port}`);
  };
  const kill = (signal: NodeJS.Signals = 'SIGKILL'): Promise<void> => stopChild(child, signal);
  await launch();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    get pid() {
      return child.pid!;
    },
    command: (line) => inline(port, line),
    kill,
    restart: launch,
    stop: async () => {
      await kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

type Client = ReturnType<typeof makeClient>;
const makeClient = (url: string) => createClient({ url, disableOfflineQueue: true });

/**
 * node-redis clients of a spec's server, as the stores' users make them (no offline queue: a
 * command while disconnected fails at once; connection errors swallowed, as a long-lived app
 * logs them), each quit by `quitAll()`.
 */

export function redisClients(url: () => string): { connect(): Promise<Client>; quitAll(): Promise<void> } {
  const clients: Client[] = [];
  return {
    async connect() {
      const client = makeClient(url());
      client.on('error', () => undefined);
      await client.connect();
      clients.push(client);
      return client;
    },
    async quitAll() {
      // a QUIT that gets no answer within 3 s (a loaded machine, a server being stopped) is given
      // up, the socket destroyed, and said: the after hook never hangs on a client's goodbye
      for (const c of clients.splice(0)) {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<'late'>((resolve) => (timer = globalThis.setTimeout(() => resolve('late'), 3000)));
        const quit = await Promise.race([c.quit().catch(() => undefined), late]);
        globalThis.clearTimeout(timer);
        if (quit === 'late') {
          console.warn('      (a node-redis client did not answer QUIT within 3 s: destroyed)');
          c.destroy();
        }
      }
    },
  };
}

/**
 * In a describe: a redis-server of its own, started before its cases (skipped with a notice where
 * the program is missing, outside CI) and stopped after them, and the node-redis clients its cases
 * connect (quit first). `beforeStop`: what the describe closes before the clients quit (its stores).
 */
export function useRedisServer(beforeStop?: () => Promise<void>): { readonly redis: ReturnType<typeof redisClients>; server(): RedisServer } {
  let server: RedisServer | undefined;
  const redis = redisClients(() => server!.url);
  before(async function () {
    const program = requireProgram(this, { name: 'redis-server', command: 'redis-server', install: 'apt-get install redis-server (.ci/run does)' });
    this.timeout(20_000);
    server = await startRedis(program);
  });
  after(async () => {
    await beforeStop?.();
    await redis.quitAll();
    await server?.stop();
  });
  return { redis, server: () => server! };
}
