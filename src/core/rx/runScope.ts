/**
 * State that belongs to one agent run and that operators inside its pipelines may need: the
 * consecutive failures of each tool (reflectOnError counts per tool per run), and which errors
 * must end the run rather than go back to the model.
 *
 * @module
 */

/**
 * One run's shared state. `runAgent` makes one per run; tool errors raised inside the run are
 * bound to it, so operators find it from the error alone.
 */
export class RunScope {
  // both made on first use: most runs never fail a tool (an idle run holds neither)
  private failures: Map<string, number> | undefined;
  private successListeners: Set<(toolName: string) => void> | undefined;

  /** Consecutive failures per tool name in this run. */
  get toolFailures(): Map<string, number> {
    return (this.failures ??= new Map());
  }

  /** The run saw a tool succeed: its consecutive-failure count starts over. */
  toolSucceeded(toolName: string): void {
    this.failures?.delete(toolName);
    if (this.successListeners) for (const listener of this.successListeners) listener(toolName);
  }

  /** Be told when a tool succeeds in this run. */
  onToolSuccess(listener: (toolName: string) => void): void {
    (this.successListeners ??= new Set()).add(listener);
  }
}

const scopes = new WeakMap<object, RunScope>();
const fatal = new WeakSet<object>();

/** Binds an error to the run it happened in. */
export function bindToRun(error: unknown, scope: RunScope | undefined): void {
  if (scope && typeof error === 'object' && error !== null) scopes.set(error, scope);
}

/** The run an error happened in, if it was raised inside one. */
export function runOf(error: unknown): RunScope | undefined {
  return typeof error === 'object' && error !== null ? scopes.get(error) : undefined;
}

/** Marks an error as ending the run (instead of being reported to the model). */
export function markFatal(error: unknown): void {
  if (typeof error === 'object' && error !== null) fatal.add(error);
}

/** Whether {@link markFatal} marked this error. */
export function isFatal(error: unknown): boolean {
  return typeof error === 'object' && error !== null && fatal.has(error);
}
