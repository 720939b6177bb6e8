/**
 * What the specs' and the bench's engine processes call of the engines' SDKs — `DBOS` of
 * `@dbos-inc/dbos-sdk` 5.x, `@restatedev/restate-sdk` 1.x — typed here by hand: the SDKs are
 * spec/support/majors's (Node ≥ 22), not the project's, and are imported by name at run time.
 */

/** `DBOS`, as far as the processes use it. */
export interface Dbos {
  runStep<T>(fn: () => Promise<T>, config?: { name?: string }): Promise<T>;
  setConfig(config: Record<string, unknown>): void;
  registerWorkflow<A extends unknown[], R>(fn: (...args: A) => Promise<R>, config: { name: string }): (...args: A) => Promise<R>;
  launch(): Promise<void>;
  startWorkflow<A extends unknown[], R>(
    workflow: (...args: A) => Promise<R>,
    params: { workflowID: string },
  ): (...args: A) => Promise<{ getResult(): Promise<R> }>;
  retrieveWorkflow<R>(id: string): { getResult(): Promise<R> };
  shutdown(): Promise<void>;
  readonly workflowID: string | undefined;
}

/** A Restate handler's context, as far as the processes use it. */
export interface RestateContext {
  run<T>(name: string, fn: () => Promise<T>): PromiseLike<T>;
  request(): { readonly id: string };
}

/** `@restatedev/restate-sdk`'s service definition and endpoint. */
export interface RestateSdk {
  service(definition: { name: string; handlers: Record<string, (ctx: RestateContext, input: never) => Promise<unknown>> }): unknown;
  serve(options: { services: unknown[]; port: number }): Promise<unknown>;
}

/** The SDKs' package names, imported by name at run time (resolved from spec/support/majors, where the processes' bundles are). */
export const DBOS_SDK = '@dbos-inc/dbos-sdk';
export const RESTATE_SDK = '@restatedev/restate-sdk';
