/**
 * `rxheal/restate`: a run journaled on Restate's own steps ({@link restateJournal}) — each model
 * turn and each tool call one `ctx.run`, in the journal the Restate server keeps, healed inside it
 * by rxheal. When Restate retries the invocation (its service process died, or it was suspended),
 * the handler runs again and every step it completed comes back from the journal: rxheal calls
 * nothing twice. `@restatedev/restate-sdk` (1.x) is an optional peer dependency, never imported
 * here: you hand over the handler's context.
 *
 * @example
 * ```ts
 * import * as restate from '@restatedev/restate-sdk';
 * import { lastValueFrom } from 'rxjs';
 * import { runAgent } from 'rxheal';
 * import { restateJournal } from 'rxheal/restate';
 *
 * const agent = restate.service({
 *   name: 'agent',
 *   handlers: {
 *     answer: (ctx: restate.Context, question: string) =>
 *       lastValueFrom(runAgent({ model, tools, messages: [{ role: 'user', content: question }], runId: ctx.request().id, journal: restateJournal(ctx) })),
 *   },
 * });
 * ```
 *
 * @module
 */
import { InvalidOptionError } from '../core/errors/errors.js';
import type { StepJournal } from '../sources/agentConfig.js';
import { stepJournal } from '../sources/stepJournal.js';

export type { StepJournal, StepRunner } from '../sources/agentConfig.js';

/**
 * What {@link restateJournal} needs of a handler's context: `run(name, fn)`, as a
 * `restate.Context` (a service's, an object's or a workflow's) of `@restatedev/restate-sdk` 1.x has it.
 *
 * @example
 * ```ts
 * const steps: RestateSteps = ctx; // a restate.Context
 * ```
 */
export interface RestateSteps {
  run<T>(name: string, action: () => Promise<T>): PromiseLike<T>;
}

/**
 * A journal on Restate's steps: give it to `runAgent` in a Restate handler, with the invocation's
 * id as `runId` (`ctx.request().id`; a workflow's key does as well). Each model turn is one
 * `ctx.run`, each tool call another named by its idempotency key (the key the effect ledger and the
 * tool's service see). A step never throws into Restate: rxheal heals inside it, and what it gives
 * up on is the step's journaled outcome — so Restate does not retry it, and a replay ends the same
 * way. Restate retries the invocation itself when its process dies.
 *
 * @throws {InvalidOptionError} when `ctx` has no `run` (not a handler's context of `@restatedev/restate-sdk` 1.x).
 * @example
 * ```ts
 * import { runAgent } from 'rxheal';
 * import { restateJournal } from 'rxheal/restate';
 *
 * const run$ = runAgent({ model, messages, runId: ctx.request().id, journal: restateJournal(ctx) });
 * ```
 */
export function restateJournal(ctx: RestateSteps): StepJournal {
  if (typeof (ctx as Partial<RestateSteps> | null)?.run !== 'function')
    throw new InvalidOptionError('restateJournal', 'ctx', ctx, 'a handler’s context of @restatedev/restate-sdk 1.x (restate.Context): it has no run(name, fn)');
  return stepJournal((name, fn) => ctx.run(name, fn));
}
