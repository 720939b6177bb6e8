/**
 * A fleet of node processes (fleetNode.ts, forked) for the fleet spec and
 * `npm run demo:fleet`: starts them, collects what they report, sends them commands, stops them.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { FleetCommand, FleetNodeConfig, FleetReport } from './fleetNode.js';

export const NODE_SCRIPT = fileURLToPath(new URL('./fleetNode.ts', import.meta.url));

export type CallReport = Extract<FleetReport, { type: 'call' }>;
export type TransitionReport = Extract<FleetReport, { type: 'transition' }>;

/** Node processes sharing one Redis. */
export class Fleet {
  readonly calls: CallReport[] = [];
  readonly transitions: TransitionReport[] = [];
  private readonly children = new Map<string, ChildProcess>();
  private readonly listeners = new Set<(r: FleetReport) => void>();

  private constructor() {}

  /** Forks one process per config and resolves once every one is ready. */
  static async start(configs: readonly FleetNodeConfig[], onReport?: (r: FleetReport) => void): Promise<Fleet> {
    const fleet = new Fleet();
    if (onReport) fleet.listeners.add(onReport);
    await Promise.all(
      configs.map(
        (config) =>
          new Promise<void>((resolve, reject) => {
            const child = fork(NODE_SCRIPT, [], {
              execArgv: ['--import', 'tsx'],
              env: { ...process.env, RXHEAL_FLEET_NODE: JSON.stringify(config) },
              stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
            });
            fleet.children.set(config.node, child);
            child.on('message', (r: FleetReport) => {
              if (r.type === 'call') fleet.calls.push(r);
              if (r.type === 'transition') fleet.transitions.push(r);
              for (const l of fleet.listeners) l(r);
              if (r.type === 'ready') resolve();
            });
            child.once('exit', (code) => reject(new Error(`fleet node ${config.node} exited (${code}) before it was ready`)));
          }),
      ),
    );
    return fleet;
  }

  /** Sends a command to the named nodes (all by default). */
  tell(command: FleetCommand, nodes: readonly string[] = [...this.children.keys()]): void {
    for (const node of nodes) this.children.get(node)?.send(command);
  }

  /** Resolves when `predicate` holds for a report (or already holds for a recorded one), or rejects after `ms`. */
  waitFor(predicate: (r: FleetReport) => boolean, ms: number, what: string): Promise<FleetReport> {
    const seen = [...this.calls, ...this.transitions].find(predicate);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = globalThis.setTimeout(() => {
        this.listeners.delete(listener);
        reject(new Error(`timed out after ${ms} ms waiting for ${what}`));
      }, ms);
      const listener = (r: FleetReport): void => {
        if (!predicate(r)) return;
        globalThis.clearTimeout(timer);
        this.listeners.delete(listener);
        resolve(r);
      };
      this.listeners.add(listener);
    });
  }

  /** Stops every node (each closes its store and clients) and waits for the processes to exit. */
  async stop(): Promise<void> {
    const exits = [...this.children.values()].map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          const kill = globalThis.setTimeout(() => child.kill('SIGKILL'), 5_000);
          child.once('exit', () => globalThis.clearTimeout(kill));
        }),
    );
    this.tell({ cmd: 'stop' });
    await Promise.all(exits);
  }
}
