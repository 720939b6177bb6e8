/**
 * Fault schedules: what the n-th call of a model, or the n-th execution of a tool, suffers. The
 * vocabulary of `rxheal/chaos` (the same fault kinds as `rxheal/server`'s local provider, in
 * virtual time), its check, and the error for a schedule that does not fit the agent.
 *
 * @module
 */

/**
 * One model call's fault. `ok`: the model answers as it would. `status`: an `HttpError` after
 * `afterMs` (429 with `retryAfterMs` sends a `retry-after-ms` header). `down`: the provider
 * refuses connections (`ECONNREFUSED`) for this call and every call of that model starting within
 * `forMs`. `reset` / `malformed`: the stream is cut after `afterEvents` of the model's events
 * (`IncompleteStreamError` / `MalformedStreamError`; before the `finish` when the answer is
 * shorter). `stall`: silence after `afterEvents`, forever (the agent's deadline must end it).
 * `slow-first-byte`: the answer starts `delayMs` late. `bad-tool-args`: the model asks its tools
 * with arguments no codec accepts.
 *
 * @example
 * ```ts
 * const faults: ModelFault[] = [{ kind: 'status', status: 429, retryAfterMs: 1000 }, { kind: 'reset', afterEvents: 2 }, { kind: 'ok' }];
 * ```
 */
export type ModelFault =
  | { readonly kind: 'ok' }
  | { readonly kind: 'status'; readonly status: number; readonly retryAfterMs?: number; readonly afterMs?: number }
  | { readonly kind: 'down'; readonly forMs: number }
  | { readonly kind: 'reset'; readonly afterEvents: number }
  | { readonly kind: 'malformed'; readonly afterEvents: number }
  | { readonly kind: 'stall'; readonly afterEvents: number }
  | { readonly kind: 'slow-first-byte'; readonly delayMs: number }
  | { readonly kind: 'bad-tool-args' };

/**
 * One tool execution's fault. `ok`: the tool runs. `throw`: it fails after `afterMs` (an
 * `HttpError` with `status`, else a plain `Error`). `timeout`: it fails with a `TimeoutError`
 * after `afterMs`. `stall`: it never answers. `is-error`: it answers an MCP-style
 * `{ isError: true, content }` result. `slow`: it runs `delayMs` late. A tool that faults did not
 * run the real tool, but counts as an execution (a side effect may have happened) — except
 * `lost-answer`: the real tool runs to its end (its effect applied), then its answer is lost and the
 * caller sees a `TimeoutError`, as when a service commits and the connection drops, so a retry or a
 * resume runs it again (a tool that deduplicates by key must then answer its first result).
 *
 * @example
 * ```ts
 * const faults: ToolFault[] = [{ kind: 'throw', status: 503 }, { kind: 'ok' }];
 * ```
 */
export type ToolFault =
  | { readonly kind: 'ok' }
  | { readonly kind: 'throw'; readonly status?: number; readonly afterMs?: number }
  | { readonly kind: 'timeout'; readonly afterMs: number }
  | { readonly kind: 'stall' }
  | { readonly kind: 'is-error' }
  | { readonly kind: 'slow'; readonly delayMs: number }
  | { readonly kind: 'lost-answer' };

/**
 * A fault schedule: per model id, the faults of its 1st, 2nd… call; per tool name, those of its
 * 1st, 2nd… execution. Calls past a list's end are `ok`.
 *
 * @example
 * ```ts
 * const schedule: FaultSchedule = { models: { primary: [{ kind: 'reset', afterEvents: 1 }] }, tools: { book: [{ kind: 'throw', status: 503 }] } };
 * ```
 */
export interface FaultSchedule {
  readonly models?: Readonly<Record<string, readonly ModelFault[]>>;
  readonly tools?: Readonly<Record<string, readonly ToolFault[]>>;
}

/**
 * A schedule or an incident that does not fit what it is applied to (a tool the agent does not
 * have, a malformed fault, a log line of another version), options out of range (a negative
 * weight, a bound that is not a number), or an agent factory that throws: the message names
 * what does not fit. A `TypeError`: what it was given is not what it takes.
 *
 * @example
 * ```ts
 * try { await replaySchedule(agent, { tools: { refund: [{ kind: 'stall' }] } }); } catch (e) { if (e instanceof ChaosInputError) console.error(e.message); }
 * ```
 */
export class ChaosInputError extends TypeError {
  override readonly name = 'ChaosInputError';
}

const isInt = (u: unknown, min = 0): boolean => typeof u === 'number' && Number.isInteger(u) && u >= min && u <= 2_147_483_647;

/** The problem with one model fault, or undefined. */
function modelFaultProblem(f: unknown): string | undefined {
  const o = f as Record<string, unknown> | null;
  if (typeof o !== 'object' || o === null) return 'not an object';
  switch (o['kind']) {
    case 'ok':
    case 'bad-tool-args':
      return undefined;
    case 'status':
      if (!isInt(o['status'], 400) || (o['status'] as number) > 599) return `status ${String(o['status'])} is not 400–599`;
      if (o['retryAfterMs'] !== undefined && !isInt(o['retryAfterMs'])) return 'retryAfterMs is not a whole number of ms';
      return o['afterMs'] !== undefined && !isInt(o['afterMs']) ? 'afterMs is not a whole number of ms' : undefined;
    case 'down':
      return isInt(o['forMs']) ? undefined : 'forMs is not a whole number of ms';
    case 'reset':
    case 'malformed':
    case 'stall':
      return isInt(o['afterEvents']) ? undefined : 'afterEvents is not a whole number';
    case 'slow-first-byte':
      return isInt(o['delayMs']) ? undefined : 'delayMs is not a whole number of ms';
    default:
      return `unknown model fault kind ${JSON.stringify(o['kind'])}`;
  }
}

/** The problem with one tool fault, or undefined. */
function toolFaultProblem(f: unknown): string | undefined {
  const o = f as Record<string, unknown> | null;
  if (typeof o !== 'object' || o === null) return 'not an object';
  switch (o['kind']) {
    case 'ok':
    case 'stall':
    case 'is-error':
    case 'lost-answer':
      return undefined;
    case 'throw':
      if (o['status'] !== undefined && (!isInt(o['status'], 400) || (o['status'] as number) > 599)) return `status ${String(o['status'])} is not 400–599`;
      return o['afterMs'] !== undefined && !isInt(o['afterMs']) ? 'afterMs is not a whole number of ms' : undefined;
    case 'timeout':
      return isInt(o['afterMs']) ? undefined : 'afterMs is not a whole number of ms';
    case 'slow':
      return isInt(o['delayMs']) ? undefined : 'delayMs is not a whole number of ms';
    default:
      return `unknown tool fault kind ${JSON.stringify(o['kind'])}`;
  }
}

/**
 * Checks a schedule's shape (each fault's kind and fields) and returns it; throws
 * {@link ChaosInputError} naming the first fault that is wrong.
 *
 * @example
 * ```ts
 * validateSchedule({ models: { gpt: [{ kind: 'status', status: 503 }] } }); // fine
 * validateSchedule({ models: { gpt: [{ kind: 'status', status: 200 }] } }); // ChaosInputError: models.gpt[0]: status 200 is not 400–599
 * ```
 */
export function validateSchedule(schedule: unknown, where = 'schedule'): FaultSchedule {
  if (typeof schedule !== 'object' || schedule === null) throw new ChaosInputError(`${where}: expected { models?, tools? }, got ${String(schedule)}`);
  const s = schedule as Record<string, unknown>;
  for (const key of Object.keys(s))
    if (key !== 'models' && key !== 'tools') throw new ChaosInputError(`${where}: unknown key '${key}' (expected models, tools)`);
  for (const [part, problem] of [
    ['models', modelFaultProblem],
    ['tools', toolFaultProblem],
  ] as const) {
    const table = s[part];
    if (table === undefined) continue;
    if (typeof table !== 'object' || table === null) throw new ChaosInputError(`${where}.${part}: expected an object of fault lists`);
    for (const [name, list] of Object.entries(table)) {
      if (!Array.isArray(list)) throw new ChaosInputError(`${where}.${part}.${name}: expected an array of faults`);
      list.forEach((f: unknown, i) => {
        const p = problem(f);
        if (p !== undefined) throw new ChaosInputError(`${where}.${part}.${name}[${i}]: ${p}`);
      });
    }
  }
  return schedule as FaultSchedule;
}

/**
 * The schedule without what changes nothing: `ok` faults at the end of a list, empty lists and
 * empty tables. Two schedules that act alike compact to the same JSON.
 *
 * @example
 * ```ts
 * compactSchedule({ models: { a: [{ kind: 'ok' }] }, tools: { t: [{ kind: 'stall' }, { kind: 'ok' }] } }); // { tools: { t: [{ kind: 'stall' }] } }
 * ```
 */
export function compactSchedule(schedule: FaultSchedule): FaultSchedule {
  const part = <F extends { kind: string }>(table: Readonly<Record<string, readonly F[]>> | undefined): Record<string, F[]> | undefined => {
    const out: Record<string, F[]> = {};
    for (const [name, list] of Object.entries(table ?? {})) {
      let end = list.length;
      while (end > 0 && list[end - 1]!.kind === 'ok') end--;
      if (end > 0) out[name] = list.slice(0, end);
    }
    return Object.keys(out).length > 0 ? out : undefined;
  };
  const models = part(schedule.models);
  const tools = part(schedule.tools);
  return { ...(models ? { models } : {}), ...(tools ? { tools } : {}) };
}

/**
 * A fault in a few characters, for diagrams and reports: `503`, `429/1000ms`, `down/5000ms`,
 * `reset@2`, `stall@0`, `malformed@1`, `slow/3000ms`, `bad-args`, `throw/503`, `timeout/500ms`, `is-error`, `lost-answer`.
 *
 * @example
 * ```ts
 * describeFault({ kind: 'reset', afterEvents: 2 }); // 'reset@2'
 * ```
 */
export function describeFault(fault: ModelFault | ToolFault): string {
  switch (fault.kind) {
    case 'ok':
      return 'ok';
    case 'status':
      return `${fault.status}${fault.retryAfterMs !== undefined ? `/${fault.retryAfterMs}ms` : ''}`;
    case 'down':
      return `down/${fault.forMs}ms`;
    case 'reset':
    case 'malformed':
    case 'stall':
      return 'afterEvents' in fault ? `${fault.kind}@${fault.afterEvents}` : 'stall';
    case 'slow-first-byte':
      return `slow/${fault.delayMs}ms`;
    case 'bad-tool-args':
      return 'bad-args';
    case 'throw':
      return fault.status !== undefined ? `throw/${fault.status}` : 'throw';
    case 'timeout':
      return `timeout/${fault.afterMs}ms`;
    case 'is-error':
    case 'lost-answer':
      return fault.kind;
    case 'slow':
      return `slow/${fault.delayMs}ms`;
  }
}
