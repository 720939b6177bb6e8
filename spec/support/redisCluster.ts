/**
 * A real Redis Cluster for specs: `masters` redis-servers started with `--cluster-enabled yes` on
 * free loopback ports (each with its own cluster bus port, `--cluster-port`), joined by
 * `redis-cli --cluster create … --cluster-yes`, ready once every node reports `cluster_state:ok`
 * and agrees on the slots; stopped by pid, directories removed. Plus what the specs do to it:
 * move a slot (MOVED), leave one half-migrated (ASK), flush the script caches (NOSCRIPT).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { freePort, stopChild } from './redisServer.js';

const run = promisify(execFile);

/** One master of the cluster. */
export interface ClusterNode {
  readonly port: number;
  readonly url: string;
  /** Its cluster node id. */
  readonly id: string;
}

/** A running cluster. */
export interface RedisClusterServers {
  readonly nodes: readonly ClusterNode[];
  /** `redis-cli -p <port> <args…>` on one node: its reply as redis-cli prints it (trimmed). */
  cli(port: number, ...args: string[]): Promise<string>;
  /** The node serving `slot` now. */
  owner(slot: number): Promise<ClusterNode>;
  /** The slot of `key` (`CLUSTER KEYSLOT`). */
  slotOf(key: string): Promise<number>;
  /**
   * Moves `slot` with its keys to `to`, as `redis-cli --cluster reshard` does for each slot:
   * IMPORTING / MIGRATING, `MIGRATE` of every key, then `SETSLOT … NODE` on every master.
   * `halfway`, when given, runs between the start of the migration (keys still on the source:
   * clients get `ASK` for keys already moved, and for new keys) and its end.
   */
  moveSlot(slot: number, to: ClusterNode, halfway?: () => Promise<void>): Promise<void>;
  /** `SCRIPT FLUSH` on every master: the next `EVALSHA` anywhere gets `NOSCRIPT`. */
  flushScripts(): Promise<void>;
  /** Kills `node` (SIGKILL) and starts it again on its port, empty but with its slots (nodes.conf), until the cluster is whole again. */
  restart(node: ClusterNode): Promise<void>;
  /** Stops every node for good and removes their directories. */
  stop(): Promise<void>;
}

/** Starts a cluster of `masters` nodes (no replicas); `server` and `cli` are the paths `requireProgram` found. */
export async function startRedisCluster(server: string, cli: string, masters = 3): Promise<RedisClusterServers> {
  const dirs: string[] = [];
  const children: ChildProcess[] = [];
  const ports: number[] = [];
  const argsOf: string[][] = [];
  const command = async (port: number, ...args: string[]): Promise<string> =>
    (await run(cli, ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 20_000 })).stdout.trim();
  try {
    for (let i = 0; i < masters; i++) {
      const port = await freePort();
      const bus = await freePort();
      const dir = mkdtempSync(join(tmpdir(), 'rxheal-cluster-'));
      dirs.push(dir);
      ports.push(port);
      const args = [
        '--bind',
        '127.0.0.1',
        '--port',
        String(port),
        '--cluster-enabled',
        'yes',
        '--cluster-port',
        String(bus),
        '--cluster-config-file',
        'nodes.conf',
        '--cluster-node-timeout',
        '5000',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
      ];
      argsOf.push(args);
      children.push(spawn(server, args, { stdio: 'ignore' }));
    }
    for (const port of ports) await until(async () => (await command(port, 'PING').catch(() => '')) === 'PONG', `redis-server on ${port}`);
    await run(cli, ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-yes'], { timeout: 60_000 });
    // every node sees the cluster whole (every slot served, every node known as a master)
    for (const port of ports) {
      await until(async () => {
        const info = await command(port, 'CLUSTER', 'INFO').catch(() => '');
        const known = (await command(port, 'CLUSTER', 'NODES').catch(() => ''))
          .split('\n')
          .filter((l) => l.split(' ')[2]?.includes('master') === true && !l.includes('fail')).length;
        return info.includes('cluster_state:ok') && known === masters;
      }, `the cluster seen from ${port}`);
    }
  } catch (error) {
    for (const c of children) c.kill('SIGKILL');
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    throw error;
  }
  const nodes: ClusterNode[] = [];
  for (const port of ports) nodes.push({ port, url: `redis://127.0.0.1:${port}`, id: await command(port, 'CLUSTER', 'MYID') });
  const owner = async (slot: number): Promise<ClusterNode> => {
    const lines = (await command(nodes[0]!.port, 'CLUSTER', 'NODES')).split('\n');
    for (const line of lines) {
      const fields = line.split(' ');
      if (!fields[2]?.includes('master')) continue;
      for (const range of fields.slice(8)) {
        if (range.startsWith('[')) continue;
        const [from, to = from] = range.split('-').map(Number) as [number, number?];
        if (slot >= from && slot <= to!) return nodes.find((n) => n.id === fields[0])!;
      }
    }
    throw new Error(`no master serves slot ${slot}`);
  };
  return {
    nodes,
    cli: command,
    owner,
    slotOf: async (key) => Number(await command(nodes[0]!.port, 'CLUSTER', 'KEYSLOT', key)),
    async moveSlot(slot, to, halfway) {
      const from = await owner(slot);
      if (from.id === to.id) return;
      await command(to.port, 'CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', from.id);
      await command(from.port, 'CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', to.id);
      await halfway?.();
      for (;;) {
        const keys = (await command(from.port, 'CLUSTER', 'GETKEYSINSLOT', String(slot), '100')).split('\n').filter((k) => k !== '');
        if (keys.length === 0) break;
        await command(from.port, 'MIGRATE', '127.0.0.1', String(to.port), '', '0', '5000', 'KEYS', ...keys);
      }
      for (const n of [to, from, ...nodes.filter((x) => x.id !== to.id && x.id !== from.id)])
        await command(n.port, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', to.id);
    },
    async flushScripts() {
      for (const n of nodes) await command(n.port, 'SCRIPT', 'FLUSH');
    },
    async restart(node) {
      const i = ports.indexOf(node.port);
      await stopChild(children[i]!, 'SIGKILL');
      children[i] = spawn(server, argsOf[i]!, { stdio: 'ignore' });
      for (const port of ports)
        await until(
          async () => (await command(port, 'CLUSTER', 'INFO').catch(() => '')).includes('cluster_state:ok'),
          `the cluster whole again, seen from ${port}`,
        );
    },
    async stop() {
      await Promise.all(children.map((c) => stopChild(c, 'SIGTERM')));
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    },
  };
}

/** Waits for `ok()` (every 50 ms, up to 20 s). */
async function until(ok: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await ok()) return;
    await sleep(50);
  }
  throw new Error(`timed out waiting for ${what}`);
}
