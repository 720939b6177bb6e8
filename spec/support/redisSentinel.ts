/**
 * Redis with Sentinel for specs: one primary and one replica (`--replicaof`), and three sentinels
 * watching them as `mymaster` (quorum 2), all on free loopback ports. A sentinel is
 * `redis-server <conf> --sentinel` — all Debian's `redis-sentinel` package adds is that command —
 * so the specs need only `redis-server` (and `redis-cli`). `failover()` runs `SENTINEL failover`
 * and waits until every sentinel names the replica as the primary. Stopped by pid, directories
 * removed.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { freePort, stopChild } from './redisServer.js';

const run = promisify(execFile);

/** A running primary, replica and three sentinels. */
export interface RedisSentinels {
  /** The name the sentinels monitor. */
  readonly name: 'mymaster';
  /** The sentinels' ports. */
  readonly sentinels: readonly number[];
  /** The data nodes' ports: [the first primary, the first replica]. */
  readonly servers: readonly [number, number];
  /** The port of the primary as the first sentinel names it. */
  primary(): Promise<number>;
  /** `redis-cli -p <port> <args…>`: its reply as redis-cli prints it (trimmed). */
  cli(port: number, ...args: string[]): Promise<string>;
  /** `SENTINEL failover` and wait until every sentinel names the other data node as primary (and it accepts writes). */
  failover(): Promise<number>;
  /** Kills the primary (SIGKILL) and starts it again at once, empty, before the sentinels call it down (the replica then resyncs from it, in the background). */
  restartPrimary(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts them; `server` and `cli` are the paths `requireProgram` found. */
export async function startRedisSentinels(server: string, cli: string): Promise<RedisSentinels> {
  const dir = mkdtempSync(join(tmpdir(), 'rxheal-sentinel-'));
  const children: ChildProcess[] = [];
  const command = async (port: number, ...args: string[]): Promise<string> =>
    (await run(cli, ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 20_000 })).stdout.trim();
  const primaryPort = await freePort();
  const replicaPort = await freePort();
  const sentinels = [await freePort(), await freePort(), await freePort()];
  /** The data nodes' processes by port, and how to start one. */
  const dataChildren = new Map<number, ChildProcess>();
  const data = (port: number, extra: string[]): void => {
    const child = spawn(
      server,
      ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no', '--dir', dir, '--dbfilename', `dump-${port}.rdb`, ...extra],
      { stdio: 'ignore' },
    );
    children.push(child);
    dataChildren.set(port, child);
  };
  const primaryOf = async (sentinel: number): Promise<number> =>
    Number((await command(sentinel, 'SENTINEL', 'get-master-addr-by-name', 'mymaster')).split('\n')[1]);
  try {
    data(primaryPort, []);
    data(replicaPort, ['--replicaof', '127.0.0.1', String(primaryPort)]);
    for (const port of [primaryPort, replicaPort]) await until(async () => (await command(port, 'PING').catch(() => '')) === 'PONG', `redis-server on ${port}`);
    await until(async () => (await command(replicaPort, 'INFO', 'replication')).includes('master_link_status:up'), 'the replica in sync');
    for (const port of sentinels) {
      const conf = join(dir, `sentinel-${port}.conf`);
      writeFileSync(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor mymaster 127.0.0.1 ${primaryPort} 2`,
          'sentinel down-after-milliseconds mymaster 2000',
          'sentinel failover-timeout mymaster 3000',
          'sentinel parallel-syncs mymaster 1',
          '',
        ].join('\n'),
      );
      children.push(spawn(server, [conf, '--sentinel'], { stdio: 'ignore' }));
    }
    // every sentinel knows the replica and the other sentinels
    for (const port of sentinels) {
      await until(async () => {
        const replicas = await command(port, 'SENTINEL', 'replicas', 'mymaster').catch(() => '');
        const others = await command(port, 'SENTINEL', 'sentinels', 'mymaster').catch(() => '');
        return replicas.includes(String(replicaPort)) && sentinels.filter((s) => s !== port).every((s) => others.includes(String(s)));
      }, `sentinel ${port} seeing the replica and the others`);
    }
  } catch (error) {
    for (const c of children) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    name: 'mymaster',
    sentinels,
    servers: [primaryPort, replicaPort],
    primary: () => primaryOf(sentinels[0]!),
    cli: command,
    async failover() {
      const before = await primaryOf(sentinels[0]!);
      const after = before === primaryPort ? replicaPort : primaryPort;
      // a coordinated failover, as an operator's: the replica has every write the primary acknowledged
      // (a replica promoted while behind loses the last writes: see the spec for what the fleet does then)
      await until(async () => {
        const primary = await command(before, 'INFO', 'replication');
        const replica = await command(after, 'INFO', 'replication');
        const sent = Number(/master_repl_offset:(\d+)/.exec(primary)?.[1] ?? NaN);
        const got = Number(/slave_repl_offset:(\d+)/.exec(replica)?.[1] ?? NaN);
        return replica.includes('master_link_status:up') && got >= sent;
      }, `${after} in sync with ${before}`);
      await command(sentinels[0]!, 'SENTINEL', 'failover', 'mymaster');
      for (const s of sentinels) await until(async () => (await primaryOf(s).catch(() => 0)) === after, `sentinel ${s} naming ${after}`);
      await until(async () => (await command(after, 'INFO', 'replication')).includes('role:master'), `${after} a primary`);
      return after;
    },
    async restartPrimary() {
      const port = await primaryOf(sentinels[0]!);
      await stopChild(dataChildren.get(port)!, 'SIGKILL');
      data(port, []);
      await until(async () => (await command(port, 'PING').catch(() => '')) === 'PONG', `redis-server on ${port} again`);
    },
    async stop() {
      await Promise.all(children.map((c) => stopChild(c, 'SIGTERM')));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Waits for `ok()` (every 50 ms, up to 30 s). */
async function until(ok: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await ok().catch(() => false)) return;
    await sleep(50);
  }
  throw new Error(`timed out waiting for ${what}`);
}
