/**
 * A durable-execution engine's step API as specs need it (what DBOS's `DBOS.runStep` and
 * Restate's `ctx.run` do, in memory): each life of a workflow numbers its steps from 0 in the
 * order they are started; a step the journal completed is answered from it (a JSON copy) without
 * calling its function, after checking the name is the one journaled (as the engines detect a
 * workflow that is not deterministic); a step not completed runs, and its result is journaled
 * when it resolves — unless its life has ended (a killed process journals nothing more).
 */
import type { StepRunner } from '../../src/sources/agentConfig.js';

/** A step's journal entry: its name and result. */
export interface StepEntry {
  readonly name: string;
  readonly data: unknown;
}

export class StepEngine {
  /** Completed steps by their number. */
  readonly journal = new Map<number, StepEntry>();
  /** Each step function called, by name, in order (every life). */
  readonly ran: string[] = [];
  /** Each step started, by name, in order (every life). */
  readonly started: string[] = [];

  /** A new life of the workflow: its step API, and how it dies. */
  life(): { readonly run: StepRunner; kill(): void } {
    let next = 0;
    let dead = false;
    const run: StepRunner = <T>(name: string, fn: () => Promise<T>): Promise<T> => {
      const n = next++;
      this.started.push(name);
      const done = this.journal.get(n);
      if (done !== undefined) {
        if (done.name !== name) return Promise.reject(new Error(`step ${n} was ${JSON.stringify(done.name)}, is now ${JSON.stringify(name)}`));
        return Promise.resolve(JSON.parse(JSON.stringify(done.data)) as T);
      }
      this.ran.push(name);
      return fn().then((data) => {
        if (dead) return new Promise<T>(() => undefined);
        this.journal.set(n, { name, data: JSON.parse(JSON.stringify(data)) as unknown });
        return data;
      });
    };
    return { run, kill: () => void (dead = true) };
  }
}
