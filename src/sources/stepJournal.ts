/**
 * {@link stepJournal}: a journal written through a durable-execution engine's own step API
 * instead of a database of rxheal's — DBOS's `DBOS.runStep`, Restate's `ctx.run` (the
 * `rxheal/dbos` and `rxheal/restate` adapters make one from each) — and the checks of a run on
 * one. The run itself is {@link StepRun}.
 *
 * @module
 */
import { InvalidOptionError } from '../core/errors/errors.js';
import { oneOf, validateOptions } from '../core/errors/options.js';
import { RunId } from '../core/journal/journal.js';
import { DURABLE_RUNS, type DurableRuns, type StepJournal, type StepRunner } from './agentConfig.js';
import { StepRun } from './stepRun.js';

/** What a run in an engine's steps has no use for: the engine holds the run (no lease), and runs it again to recover it (no checkpoints, no resume checks). */
const ENGINE_HOLDS = ['holder', 'leaseMs', 'checkpointMs', 'allowChanged'] as const;

const props = { runId: RunId, onUnknownOutcome: oneOf('tell-model', 'error') };

/**
 * The machinery of runs in an engine's steps, carried by each {@link stepJournal}.
 *
 * @example
 * ```ts
 * const settings = stepRuns(journal).settings('runAgent', config, undefined);
 * ```
 */
function stepRuns(journal: StepJournal): DurableRuns {
  const runs: DurableRuns = {
    settings(target, config, approvals) {
      const { runId, onUnknownOutcome } = config;
      const o = validateOptions(target, props, { runId, onUnknownOutcome });
      if (o.runId === undefined) throw new InvalidOptionError(target, 'runId', runId, props.runId.name);
      for (const key of ENGINE_HOLDS) {
        const value = config[key];
        if (value !== undefined)
          throw new InvalidOptionError(target, key, value, 'nothing, in an engine’s steps: the engine holds the run and recovers it by running it again');
      }
      if (approvals !== undefined)
        throw new InvalidOptionError(
          target,
          'approvals',
          approvals,
          'nothing, in an engine’s steps (a run there waits for people with the engine’s own signals)',
        );
      (config.tools ?? []).forEach((tool, i) => {
        if (tool.needsApproval !== undefined && tool.needsApproval !== false)
          throw new InvalidOptionError(
            target,
            `tools[${i}].needsApproval`,
            tool.needsApproval,
            `false or nothing, in an engine’s steps: tool '${tool.name}' would wait for approval in rxheal's records (wait with the engine's own signals before the run)`,
          );
      });
      return {
        runId: o.runId,
        journal,
        holder: undefined,
        leaseMs: 0,
        checkpointMs: 0,
        onUnknownOutcome: o.onUnknownOutcome ?? 'tell-model',
        allowChanged: [],
        approvals: undefined,
        runs,
      };
    },
    run: (host, agent) => new StepRun(host, agent, agent.durable!, journal),
  };
  return runs;
}

/**
 * A journal on a durable-execution engine's own steps: give it to `runAgent` as `journal`, with
 * the engine's workflow id as `runId`, inside a workflow of the engine. Each model turn is one
 * step of the engine and each tool call another, healed inside it (retries, fallbacks, a stream
 * cut and restarted); when the engine recovers the workflow by running it again, every step it
 * completed comes back from its journal (emitted with `replayed: true`) and rxheal calls nothing
 * twice. A tool call's step is named by its idempotency key (`rxheal tool <runId>/<step>/<index>/<tool>`),
 * the key the tool gets (`context.idempotencyKey`) and the effect ledger (`effects`) uses.
 *
 * `run(name, fn)` is the engine's step: `(name, fn) => DBOS.runStep(fn, { name })` or
 * `(name, fn) => ctx.run(name, fn)` — or `dbosJournal()` from `rxheal/dbos` and
 * `restateJournal(ctx)` from `rxheal/restate`. A run on it takes no `holder`, `leaseMs`,
 * `checkpointMs` or `allowChanged`, and no tool that needs approval.
 *
 * @throws {InvalidOptionError} when `run` is not a function.
 * @example
 * ```ts
 * import { DBOS } from '@dbos-inc/dbos-sdk';
 * import { lastValueFrom } from 'rxjs';
 * import { runAgent } from 'rxheal';
 * import { stepJournal } from 'rxheal/durable';
 *
 * const journal = stepJournal((name, fn) => DBOS.runStep(fn, { name }));
 * const answer = DBOS.registerWorkflow(
 *   async (question: string) => {
 *     const run$ = runAgent({ model, tools, messages: [{ role: 'user', content: question }], runId: DBOS.workflowID!, journal });
 *     return lastValueFrom(run$);
 *   },
 *   { name: 'answer' },
 * );
 * ```
 */
export function stepJournal(run: StepRunner): StepJournal {
  if (typeof run !== 'function')
    throw new InvalidOptionError(
      'stepJournal',
      'run',
      run,
      "the engine's step, a function (name, fn) => a promise of fn's result (DBOS.runStep, Restate's ctx.run)",
    );
  const journal: StepJournal & { [DURABLE_RUNS]?: DurableRuns } = { run };
  journal[DURABLE_RUNS] = stepRuns(journal);
  return journal;
}
