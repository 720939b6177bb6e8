/**
 * How a chaos run is shown: {@link marbleDiagram}, one lane per model, tool and the run itself,
 * time left to right (a column per moment something happened, its virtual ms above), and
 * {@link replaySpec}, a spec to paste that replays exactly that schedule.
 *
 * @module
 */
import type { AgentEvent } from '../core/events/events.js';
import { checkIncidentVersion, type Incident } from './incident.js';
import { DOCUMENTED_ERRORS, type ChaosRun, type ReplayOptions } from './invariants.js';
import type { ModelAttempt, ToolExecution } from './recorder.js';
import { ChaosInputError, compactSchedule, describeFault, type FaultSchedule } from './schedule.js';

/** The run lane's letter for an event, or undefined for events the diagram leaves out. */
function letter(event: AgentEvent): string | undefined {
  switch (event.type) {
    case 'retry':
      return 'R';
    case 'fallback':
      return 'F';
    case 'reset':
      return 'x';
    case 'circuit':
      return event.kind === 'rejected' ? 'o' : event.to === 'open' ? 'O' : undefined;
    case 'degraded':
      return 'D';
    case 'restored':
      return 'U';
    case 'budget-exceeded':
      return 'B';
    case 'hedge':
      return event.kind === 'started' ? 'H' : undefined;
    case 'reflection':
      return 'L';
    case 'tool-result':
      return 'T';
    case 'tool-error':
      return 'E';
    case 'message':
      return event.message.role === 'assistant' ? 'M' : undefined;
    default:
      return undefined;
  }
}

const RUN_LEGEND: Readonly<Record<string, string>> = {
  R: 'retry',
  F: 'fallback',
  x: 'reset (partial output discarded)',
  o: 'call rejected by an open circuit',
  O: 'circuit opened',
  D: 'degraded',
  U: 'restored',
  B: 'budget exceeded',
  H: 'hedge started',
  L: 'reflection',
  T: 'tool result',
  E: 'tool error',
  M: 'assistant message',
};

const endMark = (outcome: ModelAttempt['outcome']): string => (outcome === 'complete' ? '|' : outcome === 'error' ? '#' : outcome === 'cancelled' ? '!' : '');

/**
 * The run as a marble diagram: a header of virtual times, a lane per chaos model and tool (`^` a
 * call starts, `|` it completes, `#` it fails, `!` it is cancelled; several marks at one moment
 * side by side), and the run's lane (healing events and messages by letter, its end `|`, `#`, or
 * `…` for a hang); then what each call's fault was and what the letters mean.
 *
 * @example
 * ```ts
 * console.log(marbleDiagram(await replaySchedule(agent, schedule)));
 * //  ms              0    40   ...
 * //  model:primary   ^    #
 * //  …
 * ```
 */
export function marbleDiagram(run: Omit<ChaosRun, 'violations'>): string {
  const cells = new Map<string, Map<number, string>>();
  const lanes: string[] = [];
  const mark = (lane: string, at: number, text: string): void => {
    if (!cells.has(lane)) {
      cells.set(lane, new Map());
      lanes.push(lane);
    }
    const row = cells.get(lane)!;
    row.set(at, (row.get(at) ?? '') + text);
  };
  const calls: (ModelAttempt | ToolExecution)[] = [...run.models, ...run.tools].sort((a, b) => a.seq - b.seq);
  for (const c of calls) {
    const lane = c.kind === 'model' ? `model:${c.model}` : `tool:${c.tool}`;
    mark(lane, c.startedAt, '^');
    if (c.endedAt !== undefined) mark(lane, c.endedAt, endMark(c.outcome));
  }
  const used = new Set<string>();
  for (const { at, event } of run.events) {
    const l = letter(event);
    if (l === undefined) continue;
    used.add(l);
    mark('run', at, l);
  }
  mark('run', run.end.at, run.end.kind === 'complete' ? '|' : run.end.kind === 'error' ? '#' : '…');
  const times = [...new Set([...cells.values()].flatMap((row) => [...row.keys()]))].sort((a, b) => a - b);
  const width = new Map(times.map((t) => [t, Math.max(String(t).length, ...[...cells.values()].map((row) => row.get(t)?.length ?? 0)) + 2]));
  const name = Math.max(2, ...lanes.map((l) => l.length)) + 2;
  const line = (head: string, cell: (t: number) => string): string => (head.padEnd(name) + times.map((t) => cell(t).padEnd(width.get(t)!)).join('')).trimEnd();
  const out = [line('ms', (t) => String(t))];
  for (const lane of lanes) out.push(line(lane, (t) => cells.get(lane)!.get(t) ?? (lane === 'run' ? '' : '-')));
  out.push('');
  for (const c of calls) {
    const who = c.kind === 'model' ? `${c.model}#${c.call}` : `${c.tool}#${c.call}`;
    const what = c.kind === 'model' && c.text !== '' ? ` delivered ${JSON.stringify(c.text)}` : '';
    out.push(`${who}: ${describeFault(c.fault)}, ${c.outcome}${c.endedAt === undefined ? '' : ` at ${c.endedAt} ms`}${what}`);
  }
  const legend = [...used].sort().map((l) => `${l} ${RUN_LEGEND[l]}`);
  const end = run.end.kind === 'error' ? `# ${(run.end.error as Error | undefined)?.name ?? 'error'}` : run.end.kind === 'complete' ? '| answered' : '… hung';
  out.push(`run: ${[...legend, end].join(', ')}`);
  return out.join('\n');
}

/** A schedule as source text: one line per fault list. */
function scheduleSource(schedule: FaultSchedule): string {
  const one = JSON.stringify(schedule);
  if (one.length <= 80) return one;
  const part = (name: 'models' | 'tools'): string[] => {
    const table = schedule[name];
    if (!table) return [];
    return [`    ${name}: {`, ...Object.entries(table).map(([k, list]) => `      ${JSON.stringify(k)}: ${JSON.stringify(list)},`), '    },'];
  };
  return ['{', ...part('models'), ...part('tools'), '  }'].join('\n');
}

/**
 * How {@link replaySpec} names what it imports: where the agent factory comes from, its name,
 * the export holding the check's options (when it had options the spec cannot write out), and
 * which test runner the spec is for.
 *
 * @example
 * ```ts
 * const naming: ReplaySpecNaming = { from: './agent.js', agent: 'agent', options: 'healingOptions', runner: 'node:test' };
 * ```
 */
export interface ReplaySpecNaming {
  /** The module exporting the agent factory (and options). Defaults to `'./agent.js'`. */
  readonly from?: string;
  /** The factory's export name. Defaults to `'agent'`. */
  readonly agent?: string;
  /**
   * The export holding the options the run was checked with. Absent, the spec writes the
   * options out (`boundMs`, `budget`, `errors`, `randomSeed`); options it cannot write out
   * (custom invariants, error classes of your own) need it.
   */
  readonly options?: string;
  /** The module `replaySchedule` is imported from. Defaults to `'rxheal/chaos'`. */
  readonly chaos?: string;
  /**
   * Where `it` comes from: `'globals'` (mocha, jest, vitest with `globals: true`: the runner's
   * global `it`), `'node:test'` or `'vitest'` (imported). Defaults to `'globals'`.
   */
  readonly runner?: 'globals' | 'node:test' | 'vitest';
}

/**
 * A spec (an `async` `it` of mocha, jest, vitest or node:test — see `naming.runner` —, with
 * `node:assert`) that replays exactly `run`'s schedule (compacted) against the agent with the
 * options it was checked with, and asserts that it heals: paste it, it fails until the agent is
 * fixed, then guards the fix. The options are written into the spec (the budget, the bound,
 * the errors allowed, the seed) or, with `naming.options`, imported; a run checked with options
 * the spec cannot write out (custom invariants, an error class of your own) and no
 * `naming.options` is refused rather than printed without them, since such a spec could pass on
 * the agent that broke them.
 *
 * @example
 * ```ts
 * writeFileSync('spec/healing-regression.spec.ts', replaySpec(report.failure.run, { from: '../src/agent.js' }));
 * ```
 * @throws {ChaosInputError} for options the spec cannot carry without `naming.options`, and for
 * names that would not make valid source.
 */
export function replaySpec(
  run: Omit<ChaosRun, 'violations' | 'options'> & { readonly violations?: ChaosRun['violations']; readonly options?: ReplayOptions },
  naming: ReplaySpecNaming = {},
): string {
  const agent = naming.agent ?? 'agent';
  const schedule = scheduleSource(compactSchedule(run.schedule));
  const options = naming.options === undefined ? optionsSource(run.options ?? {}) : { text: naming.options, imports: [] };
  const seen = (run.violations ?? []).map((v) => `// ${v.invariant}: ${v.message.replace(/\s+/g, ' ')}`);
  return [
    ...specImports('replaySchedule', naming, options.imports),
    '',
    ...(seen.length ? ['// found by checkHealing:', ...seen] : []),
    `it('heals under the schedule checkHealing found', async () => {`,
    `  const schedule = ${schedule};`,
    `  const run = await replaySchedule(${agent}, schedule${options.text === undefined ? '' : `, ${options.text}`});`,
    '  assert.deepEqual(run.violations, []);',
    '});',
    '',
  ].join('\n');
}

/**
 * The replay options as source text, and what it imports from rxheal/chaos; a
 * `ChaosInputError` for options that cannot be written out.
 */
function optionsSource(o: ReplayOptions): { readonly text: string | undefined; readonly imports: readonly string[] } {
  const refuse = (what: string): never => {
    throw new ChaosInputError(
      `replaySpec: the run was checked with ${what}, which a spec cannot write out, and a spec without it could pass on the agent ` +
        `that failed: export the options and name the export (replaySpec's naming.options, checkHealing's spec: { options: '…' })`,
    );
  };
  const parts: string[] = [];
  const imports: string[] = [];
  if (o.boundMs !== undefined) parts.push(`boundMs: ${o.boundMs}`);
  if (o.randomSeed !== undefined && o.randomSeed !== 0) parts.push(`randomSeed: ${o.randomSeed}`);
  if (o.crashAt !== undefined) parts.push(`crashAt: ${o.crashAt}`);
  if (o.budget !== undefined) {
    if (!isJson(o.budget)) refuse('a budget that is not JSON data');
    parts.push(`budget: ${JSON.stringify(o.budget)}`);
  }
  if (o.errors !== undefined) {
    const own = o.errors.filter((k) => typeof k !== 'string' && !DOCUMENTED_ERRORS.includes(k));
    if (own.length > 0) refuse(`errors of classes of its own (${own.map((k) => (k as { name: string }).name).join(', ')})`);
    const classes = o.errors.filter((k) => typeof k !== 'string');
    const entries: string[] = [];
    if (DOCUMENTED_ERRORS.every((k) => o.errors!.includes(k))) entries.push('...DOCUMENTED_ERRORS');
    else if (classes.length > 0)
      entries.push(
        `...DOCUMENTED_ERRORS.filter((kind) => typeof kind !== 'string' && ` +
          `${JSON.stringify(classes.map((k) => (k as { name: string }).name))}.includes(kind.name))`,
      );
    if (classes.length > 0) imports.push('DOCUMENTED_ERRORS');
    for (const k of o.errors) if (typeof k === 'string') entries.push(JSON.stringify(k));
    parts.push(`errors: [${entries.join(', ')}]`);
  }
  if ((o.invariants?.length ?? 0) > 0) refuse(`custom invariants (${o.invariants!.map((i) => `'${i.name}'`).join(', ')})`);
  return { text: parts.length === 0 ? undefined : `{ ${parts.join(', ')} }`, imports };
}

/** How a generated spec gets `it`. */
function runnerLines(runner: ReplaySpecNaming['runner']): string[] {
  switch (runner) {
    case 'node:test':
      return ["import { it } from 'node:test';"];
    case 'vitest':
      return ["import { it } from 'vitest';"];
    default:
      return ["// a spec for mocha, jest or vitest (globals: true): `it` is the runner's global; for node --test, import { it } from 'node:test'"];
  }
}

/** A generated spec's imports: node:assert, the runner, `what` from rxheal/chaos, the agent (and options) from the user's module. */
function specImports(what: string, naming: ReplaySpecNaming, more: readonly string[] = []): string[] {
  checkNaming(what === 'replaySchedule' ? 'replaySpec' : 'incidentSpec', naming);
  const agent = naming.agent ?? 'agent';
  return [
    ...runnerLines(naming.runner),
    "import assert from 'node:assert/strict';",
    `import { ${[what, ...more].join(', ')} } from '${naming.chaos ?? 'rxheal/chaos'}';`,
    `import { ${naming.options === undefined ? agent : `${agent}, ${naming.options}`} } from '${naming.from ?? './agent.js'}';`,
  ];
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
const MODULE = /^[^'"\\\n\r]+$/;
const RUNNERS = new Set(['globals', 'node:test', 'vitest']);

/** Names that would not make valid source: an error naming the option and its value. */
function checkNaming(where: string, naming: ReplaySpecNaming): void {
  for (const key of ['agent', 'options'] as const) {
    const value = naming[key];
    if (value !== undefined && !IDENTIFIER.test(value)) throw new ChaosInputError(`${where}: naming.${key} ${JSON.stringify(value)} is not an identifier`);
  }
  for (const key of ['from', 'chaos'] as const) {
    const value = naming[key];
    if (value !== undefined && !MODULE.test(value))
      throw new ChaosInputError(`${where}: naming.${key} ${JSON.stringify(value)} is not a module specifier (no quotes, backslashes or line breaks)`);
  }
  if (naming.runner !== undefined && !RUNNERS.has(naming.runner))
    throw new ChaosInputError(`${where}: naming.runner ${JSON.stringify(naming.runner)} is none of 'globals', 'node:test', 'vitest'`);
}

const optionsArg = (naming: ReplaySpecNaming): string => (naming.options === undefined ? '' : `, ${naming.options}`);

/** Whether `u` is plain JSON data (what survives JSON.stringify unchanged). */
function isJson(u: unknown, seen: Set<object> = new Set()): boolean {
  if (u === null || typeof u === 'string' || typeof u === 'boolean') return true;
  if (typeof u === 'number') return Number.isFinite(u);
  if (typeof u !== 'object' || seen.has(u)) return false;
  const proto = Object.getPrototypeOf(u) as unknown;
  if (!Array.isArray(u) && proto !== Object.prototype && proto !== null) return false;
  seen.add(u);
  const ok = Object.values(u).every((v) => isJson(v, seen));
  seen.delete(u);
  return ok;
}

/** A JSON value as source text: on one line where it fits in 100 characters, else one line per entry. */
function source(value: unknown, indent: string): string {
  const one = JSON.stringify(value);
  if (one === undefined || one.length + indent.length <= 100 || typeof value !== 'object' || value === null) return one ?? 'undefined';
  const inner = `${indent}  `;
  if (Array.isArray(value)) return `[\n${value.map((v) => `${inner}${source(v, inner)},`).join('\n')}\n${indent}]`;
  const entries = Object.entries(value).filter(([, v]) => v !== undefined);
  return `{\n${entries.map(([k, v]) => `${inner}${JSON.stringify(k)}: ${source(v, inner)},`).join('\n')}\n${indent}}`;
}

/**
 * How {@link incidentSpec} names what it imports ({@link ReplaySpecNaming}), and how it calls the
 * agent's export when that makes the factory (`agentArgs`), with the spec's title.
 *
 * @example
 * ```ts
 * const naming: IncidentSpecNaming = { from: '../src/agent.js', agent: 'supportAgent', agentArgs: [{ region: 'eu' }], title: 'the 2026-12-01 outage heals' };
 * ```
 */
export interface IncidentSpecNaming extends ReplaySpecNaming {
  /** JSON values the export is called with to make the agent factory (`supportAgent(...agentArgs)`); absent, the export is the factory. */
  readonly agentArgs?: readonly unknown[];
  /** The spec's title. Defaults to `'heals as it did in the incident'`. */
  readonly title?: string;
}

/**
 * A spec (mocha / vitest / node:test style `it`, `node:assert`) that replays a recorded incident
 * against the agent in virtual time and asserts that it heals the same way: the built-in
 * invariants hold, and the healing steps are the incident's (types, order, targets, attempts,
 * delays). The incident is in the spec, whole: what each call suffered, and the healing seen.
 *
 * @example
 * ```ts
 * const incident = recordIncident(readFileSync('incident.log', 'utf8'));
 * writeFileSync('spec/incident-2026-12-01.spec.ts', incidentSpec(incident, { from: '../src/agent.js', title: 'the 2026-12-01 outage heals' }));
 * ```
 * @throws {ChaosInputError} for an incident of another version, an `agentArgs` entry that is not
 * JSON data, or a name that would not make valid source (`agent`, `options` not identifiers;
 * `from`, `chaos` with quotes or line breaks).
 */
export function incidentSpec(incident: Incident, naming: IncidentSpecNaming = {}): string {
  checkIncidentVersion('incidentSpec', 'writes', incident);
  (naming.agentArgs ?? []).forEach((arg, i) => {
    if (!isJson(arg))
      throw new ChaosInputError(
        `incidentSpec: naming.agentArgs[${i}] is not a JSON value (a function, undefined, a class instance or a cycle cannot be written into the spec)`,
      );
  });
  const agent = naming.agent ?? 'agent';
  const made = naming.agentArgs === undefined ? agent : `${agent}(${naming.agentArgs.map((a) => source(a, '')).join(', ')})`;
  const title = naming.title ?? 'heals as it did in the incident';
  const indent = (text: string): string => text.replace(/\n/g, '\n  ');
  return [
    ...specImports('replayIncident', naming),
    '',
    `it(${JSON.stringify(title)}, async () => {`,
    '  // the incident: what each call suffered, and the healing the run reported',
    `  const replay = await replayIncident(${indent(source(incident, ''))}, ${indent(made)}${optionsArg(naming)});`,
    '  assert.deepEqual(replay.run.violations, []);',
    '  assert.deepEqual(replay.healing, replay.expected);',
    '  assert.deepEqual(replay.calls, replay.expectedCalls);',
    '});',
    '',
  ].join('\n');
}
