/**
 * The house's rooms and the one table of their order. Every folder of src/ is a room, listed
 * bottom first: a file may import files of its own room and of rooms listed before it, never one
 * listed after (that import points up), and no file may reach itself through its imports (a cycle).
 * spec/layers.spec.ts checks both against the code (and that no file outgrows MAX_LINES unless
 * its header says it is one state machine or one table); scripts/architecture.ts writes the rooms'
 * table and the import diagram of docs/architecture.md from this same table.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

export const ROOT = new URL('..', import.meta.url).pathname;

/** A folder of src/ (or a lone entry file), what it is for, and what it is made of. */
export interface Room {
  /** Path under src/ (a folder, or `index.ts` for the root entry). */
  readonly path: string;
  /** One line: what lives here. */
  readonly purpose: string;
}

/** Bottom first: a room may import itself and any room above it in this list, nothing below. */
export const ROOMS: readonly Room[] = [
  {
    path: 'core/rx',
    purpose: `RxJS building blocks every part uses: the one place a wait is armed (wait.ts), the guard for user callbacks, backoff maths, the one way operators are built (operate.ts), a run's scope`,
  },
  {
    path: 'core/errors',
    purpose: `What goes wrong and what it means: rxheal's error classes, option checks that throw them, redaction of error text, what an error says of itself (status, headers, retry-after, API error type), and the classifier that decides whether an error is retried, counted or passed on`,
  },
  {
    path: 'core/events',
    purpose: 'The event model: messages, what a model stream emits, what the agent loop reports (types and io-ts codecs), and the message predicate',
  },
  {
    path: 'core/circuit',
    purpose: `A breaker's vocabulary — states, reasons, the event of each move — a breaker's permit, and what a hub or registry follows of a breaker (its events$)`,
  },
  { path: 'core/hub', purpose: 'The events hub: where every operator reports what the healing did, and how it follows breakers' },
  {
    path: 'core/breaker',
    purpose:
      'The circuit breaker state machine, its registry, snapshots and failure-rate window, and the seam it defines for a fleet (FleetOptions, the BreakerStore contract, FleetHook)',
  },
  {
    path: 'core/fleet',
    purpose: `The fleet's node logic that implements the breaker's seam (votes, one prober, facts, the store link), the memory store, and the guard around any shared store`,
  },
  { path: 'core/rate-limit', purpose: 'Shared rate limits: the GCRA store contract, its memory store, and the RateLimiter that reserves calls on it' },
  {
    path: 'core/journal',
    purpose: `The run journal's store contract (JournalStore, JournalSession, the run-id and record rules), its errors, the one session every store hands out, and memoryJournal, the reference model on a scheduler`,
  },
  {
    path: 'core/money',
    purpose: `Money: a price list per model id and the one rule that turns a call's usage into dollars, and the seam (SpendGate) a run reserves against before each provider attempt`,
  },
  {
    path: 'core/bulkhead',
    purpose: `Bulkheads: at most so many calls of a model or tool at once, a bounded FIFO queue with its timeout, the typed refusal, and the registry of bulkheads per name`,
  },
  {
    path: 'core/model',
    purpose: 'The model contract (Model, ModelRequest, streamModel), abortable calls, call lifecycle events, and the text a turn accumulates',
  },
  {
    path: 'core/latency',
    purpose: `Observed latency: per-model and per-tool trackers of time to first item and gaps between items (HdrHistogram), their registry, and deadlines derived from their quantiles`,
  },
  { path: 'core/fallback', purpose: 'The rules of a fallback chain, once for fallbackTo and fallbackModel' },
  {
    path: 'core/pool',
    purpose: `What a model pool remembers between calls (each member's blocks, load and successes; each conversation's member and cached prefix), how a strategy ranks members, and the default wait-or-move rule`,
  },
  { path: 'core/capabilities', purpose: 'The capability registry: what degradeAfter turns off and on' },
  {
    path: 'operators',
    purpose:
      'The pipeable operators users compose: the five (retryWithBackoff, circuitBreak, reflectOnError, fallbackTo, degradeAfter) and callPolicy, rateLimit, validateOutput, bulkhead, hedge (with its HedgeBudget)',
  },
  { path: 'sources', purpose: `What produces a run's events: runAgent (the agent loop), fallbackModel, modelPool, and tools` },
  { path: 'providers', purpose: 'rxheal/providers: models over HTTP (OpenAI-compatible and Anthropic) and their SSE decoders' },
  { path: 'observe', purpose: 'Reading a run: the logger and the summary of what healed' },
  { path: 'adapters', purpose: 'What the SDK adapters share (abort handling, tool-schema and error helpers)' },
  { path: 'events', purpose: 'rxheal/events: the event model alone, re-exported, with the log records and summaries read from it' },
  {
    path: 'fleet',
    purpose: 'rxheal/fleet: breakers and rate limits beyond one process — the memory stores, the store contracts with their node logic, breaker snapshots',
  },
  { path: 'testing', purpose: `rxheal/testing: scripted models and tools, marbles and virtual-time helpers for users' own specs` },
  {
    path: 'chaos',
    purpose: `rxheal/chaos: fault schedules as fast-check arbitraries, applied in virtual time to users' own models and tools; checkHealing's invariants, shrunk failures as marble diagrams and replay specs; incidents recorded and replayed`,
  },
  { path: 'otel', purpose: `rxheal/otel: the hub's events as OpenTelemetry spans and metrics` },
  { path: 'server', purpose: 'rxheal/server: the local provider (OpenAI and Anthropic wire formats on 127.0.0.1) with scripted answers and faults' },
  {
    path: 'durable',
    purpose: `rxheal/durable: fileJournal, one append-only checksummed file per run with a lease of lock files (and memoryJournal re-exported)`,
  },
  { path: 'redis', purpose: 'rxheal/redis: the breaker, rate-limit and journal stores on Redis (Lua scripts, one client layer)' },
  { path: 'postgres', purpose: 'rxheal/postgres: postgresJournal, the run journal in one Postgres table with a lease row per run' },
  { path: 'dbos', purpose: `rxheal/dbos: dbosJournal, a run journaled on DBOS's own steps (DBOS.runStep)` },
  { path: 'restate', purpose: `rxheal/restate: restateJournal, a run journaled on Restate's own steps (ctx.run)` },
  { path: 'openai', purpose: 'rxheal/openai: fromOpenAI, a model over the official openai SDK' },
  { path: 'anthropic', purpose: 'rxheal/anthropic: fromAnthropic, a model over the official Anthropic SDK' },
  { path: 'ai-sdk', purpose: 'rxheal/ai-sdk: fromAiSdk (an AI SDK model as an rxheal model) and toAiSdk (an rxheal model as an AI SDK one)' },
  { path: 'langchain', purpose: 'rxheal/langchain: fromLangChain and toLangChain, both directions for LangChain chat models' },
  {
    path: 'mcp',
    purpose: `rxheal/mcp: fromMcp and watchMcpTools, an MCP server's tools as rxheal tools (schema-checked, a breaker per server, progress-aware timeouts, reconnection), and the MCP client's errors in rxheal's words`,
  },
  {
    path: 'a2a',
    purpose: `rxheal/a2a: fromA2A (a remote A2A agent as a streaming tool: a breaker per agent, deadlines, cut streams resubscribed, tasks/cancel) and toA2A (an rxheal agent served as an A2A server on 127.0.0.1)`,
  },
  { path: 'index.ts', purpose: 'rxheal: the root entry, what users compose (no framework imported)' },
];

/** Every `.ts` file under `dir`, as paths relative to src/. */
export function sourceFiles(dir = join(ROOT, 'src')): string[] {
  const src = join(ROOT, 'src');
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return sourceFiles(path);
      return name.endsWith('.ts') ? [relative(src, path)] : [];
    });
}

/**
 * The files of src/ that `file` imports (paths relative to src/): static `import … from`,
 * `export … from`, side-effect `import '…'` and `import('…')`, type-only ones included (a type
 * import is a dependency of the source as much as a value import).
 */
export function importsOf(file: string, text = readFileSync(join(ROOT, 'src', file), 'utf8')): string[] {
  const src = join(ROOT, 'src');
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const found = new Set<string>();
  for (const match of code.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)'(\.{1,2}\/[^']*)'/g)) {
    const target = relative(src, resolve(dirname(join(src, file)), match[1]!)).replace(/\.js$/, '.ts');
    found.add(target);
  }
  return [...found].sort();
}

/** The most lines a file of src/ may have, unless its header says it is one state machine or one table. */
export const MAX_LINES = 500;

/**
 * Whether a file's text is over {@link MAX_LINES} lines without its header (the first block
 * comment) saying it is one state machine or one table.
 */
export function tooLong(text: string): boolean {
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  if (lines <= MAX_LINES) return false;
  const header = /^\s*(?:\/\/[^\n]*\n\s*)*\/\*\*?([\s\S]*?)\*\//.exec(text)?.[1] ?? '';
  return !/\bone (?:state machine|table)\b/i.test(header.replace(/\s*\*\s*/g, ' '));
}

/** The import graph of src/: each file and the files it imports. */
export function importGraph(): Map<string, string[]> {
  return new Map(sourceFiles().map((file) => [file, importsOf(file)]));
}

/** The index in {@link ROOMS} of the room holding `file` (the longest matching path), or -1. */
export function roomOf(file: string, rooms: readonly Room[] = ROOMS): number {
  let best = -1;
  let length = -1;
  rooms.forEach((room, i) => {
    const inside = room.path.endsWith('.ts') ? file === room.path : file.startsWith(`${room.path}/`);
    if (inside && room.path.length > length) {
      best = i;
      length = room.path.length;
    }
  });
  return best;
}

/** Strongly connected groups of more than one file (Tarjan), each sorted; a file importing itself too. */
export function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(group.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** Imports that point up the table (to a room listed after the importer's): `from → to (why)`. */
export function upwardImports(graph: Map<string, string[]>, rooms: readonly Room[] = ROOMS): string[] {
  const out: string[] = [];
  for (const [file, targets] of graph) {
    for (const target of targets) {
      if (roomOf(target, rooms) > roomOf(file, rooms))
        out.push(`${file} → ${target} (${rooms[roomOf(file, rooms)]?.path} may not import ${rooms[roomOf(target, rooms)]?.path})`);
    }
  }
  return out;
}

/** Between rooms: for each importing room, the rooms it imports and how many import lines. */
export function roomGraph(graph: Map<string, string[]>, rooms: readonly Room[] = ROOMS): Map<number, Map<number, number>> {
  const out = new Map<number, Map<number, number>>();
  for (const [file, targets] of graph) {
    const from = roomOf(file, rooms);
    for (const target of targets) {
      const to = roomOf(target, rooms);
      if (to === from) continue;
      const row = out.get(from) ?? new Map<number, number>();
      row.set(to, (row.get(to) ?? 0) + 1);
      out.set(from, row);
    }
  }
  return out;
}
