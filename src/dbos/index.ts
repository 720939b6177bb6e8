/**
 * `rxheal/dbos`: a run journaled on DBOS's own steps ({@link dbosJournal}) — each model turn and
 * each tool call one `DBOS.runStep`, checkpointed in DBOS's Postgres, healed inside it by rxheal.
 * When DBOS recovers the workflow (a process that died: `DBOS.launch()` on the next), every step
 * it completed comes back from its journal and rxheal calls nothing twice. `@dbos-inc/dbos-sdk`
 * (5.x) is an optional peer dependency, never imported here: you hand over its `DBOS`.
 *
 * @example
 * ```ts
 * import { DBOS } from '@dbos-inc/dbos-sdk';
 * import { lastValueFrom } from 'rxjs';
 * import { runAgent } from 'rxheal';
 * import { dbosJournal } from 'rxheal/dbos';
 *
 * const journal = dbosJournal(DBOS);
 * const answer = DBOS.registerWorkflow(
 *   (question: string) => lastValueFrom(runAgent({ model, tools, messages: [{ role: 'user', content: question }], runId: DBOS.workflowID!, journal })),
 *   { name: 'answer' },
 * );
 * ```
 *
 * @module
 */
import { InvalidOptionError } from '../core/errors/errors.js';
import type { StepJournal } from '../sources/agentConfig.js';
import { stepJournal } from '../sources/stepJournal.js';

export type { StepJournal, StepRunner } from '../sources/agentConfig.js';

/**
 * What {@link dbosJournal} needs of DBOS: `runStep(fn, { name })`, as `DBOS` of
 * `@dbos-inc/dbos-sdk` 5.x has it.
 *
 * @example
 * ```ts
 * import { DBOS } from '@dbos-inc/dbos-sdk';
 * const steps: DbosSteps = DBOS;
 * ```
 */
export interface DbosSteps {
  runStep<T>(fn: () => Promise<T>, config?: { name?: string; retriesAllowed?: boolean }): Promise<T>;
}

/**
 * A journal on DBOS's steps: give it to `runAgent` inside a DBOS workflow, with the workflow's id
 * as `runId` (`DBOS.workflowID`). Each model turn is one step, each tool call another named by its
 * idempotency key (the key the effect ledger and the tool's service see), and no step is retried
 * by DBOS (`retriesAllowed: false`): rxheal heals inside it, and what it gives up on is the step's
 * recorded outcome, so that a recovery ends the same way.
 *
 * @throws {InvalidOptionError} when `dbos` has no `runStep` (not the `DBOS` of `@dbos-inc/dbos-sdk` 5.x).
 * @example
 * ```ts
 * import { DBOS } from '@dbos-inc/dbos-sdk';
 * import { runAgent } from 'rxheal';
 * import { dbosJournal } from 'rxheal/dbos';
 *
 * const run$ = runAgent({ model, messages, runId: DBOS.workflowID!, journal: dbosJournal(DBOS) });
 * ```
 */
export function dbosJournal(dbos: DbosSteps): StepJournal {
  if (typeof (dbos as Partial<DbosSteps> | null)?.runStep !== 'function')
    throw new InvalidOptionError(
      'dbosJournal',
      'dbos',
      dbos,
      "DBOS of @dbos-inc/dbos-sdk 5.x (import { DBOS } from '@dbos-inc/dbos-sdk'): it has no runStep(fn, { name })",
    );
  return stepJournal((name, fn) => dbos.runStep(fn, { name, retriesAllowed: false }));
}
