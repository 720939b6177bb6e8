/**
 * A spending fleet of real OS processes (spec/support/spendWorker.ts, forked with `--import tsx`)
 * on one shared money limit in Redis, for spec/redis/spendFleet.spec.ts and bench figure
 * `spend`: start the processes once, connect them, run the same fleet as often as wanted
 * (reserving, or checking after the fact as gateways do), and sum what each window was spent.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { SpendRedisAt, SpendReport, SpendRun, SpendWorkerMessage } from './spendWorker.js';

const WORKER = fileURLToPath(new URL('./spendWorker.ts', import.meta.url));

/** One window of a run, summed over every process. */
export interface SpendWindowTotal {
  readonly window: number;
  readonly calls: number;
  readonly refused: number;
  readonly actualNanos: number;
  readonly excessNanos: number;
  /** Limiter mode: the cost of calls held on a local share (not in Redis). */
  readonly localNanos: number;
}

/** A run's outcome: per window, and every process's latencies and errors. */
export interface SpendFleetRun {
  /** The key the store kept the run's windows under (a limiter's: `<name>:all`, its one budget). */
  readonly storeKey: string;
  readonly windows: SpendWindowTotal[];
  /** Limiter mode: holds decided on a local share (the store did not answer in time). */
  readonly local: number;
  readonly latenciesMs: number[];
  readonly errors: string[];
  readonly ms: number;
}

/** The processes of a fleet. */
export interface SpendFleet {
  /** Every process connects to `at`: a store named `name` (`timeoutMs` per call). */
  connect(name: string, at: SpendRedisAt, namespace: string, timeoutMs: number): Promise<void>;
  run(run: Omit<SpendRun, 'at' | 'nodes'>): Promise<SpendFleetRun>;
  stop(): Promise<void>;
}

function answer<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: { type: string }) => {
      if (m.type !== type) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(m as T);
    };
    const onExit = (code: number | null) => reject(new Error(`a spend worker exited (${code}) before '${type}'`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

/** Forks `processes` workers (their stores to connect). */
export function spendFleet(processes: number): SpendFleet {
  const children = Array.from({ length: processes }, () => fork(WORKER, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  const stop = async (): Promise<void> => {
    await Promise.all(
      children.map(async (c) => {
        if (c.exitCode !== null || c.signalCode !== null) return;
        const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
        if (c.connected) c.send({ type: 'close' } satisfies SpendWorkerMessage);
        const timer = setTimeout(() => c.kill('SIGKILL'), 3_000);
        await exited;
        clearTimeout(timer);
      }),
    );
  };
  return {
    stop,
    async connect(name, at, namespace, timeoutMs) {
      await Promise.all(
        children.map((c) => {
          const connected = answer(c, 'connected');
          c.send({ type: 'connect', name, at, namespace, timeoutMs } satisfies SpendWorkerMessage);
          return connected;
        }),
      );
    },
    async run(run) {
      // an instant far enough ahead that every process has the command: they start together
      const at = Date.now() + 200;
      const reports = await Promise.all(
        children.map((c) => {
          const done = answer<{ report: SpendReport }>(c, 'done');
          c.send({ type: 'run', ...run, at, nodes: children.length } satisfies SpendWorkerMessage);
          return done;
        }),
      );
      const ms = Date.now() - at;
      const windows = new Map<number, { -readonly [K in keyof SpendWindowTotal]: SpendWindowTotal[K] }>();
      for (const { report } of reports)
        for (const w of report.windows) {
          const total = windows.get(w.window) ?? { window: w.window, calls: 0, refused: 0, actualNanos: 0, excessNanos: 0, localNanos: 0 };
          total.calls += w.calls;
          total.refused += w.refused;
          total.actualNanos += w.actualNanos;
          total.excessNanos += w.excessNanos;
          total.localNanos += w.localNanos;
          windows.set(w.window, total);
        }
      return {
        storeKey: run.mode === 'limiter' ? `${run.key}:all` : run.key,
        local: reports.reduce((n, r) => n + r.report.local, 0),
        windows: [...windows.values()].sort((a, b) => a.window - b.window),
        latenciesMs: reports.flatMap((r) => r.report.latenciesMs),
        errors: reports.flatMap((r) => r.report.errors),
        ms,
      };
    },
  };
}
