/**
 * A durable run killed and resumed by real processes (spec/support/durableAgentWorker.ts): an
 * agent in a child Node process books a seat against two rxheal/server providers (the primary
 * answers 503 once and cuts one stream), is SIGKILLed at planned points — mid-answer, before and
 * after each tool's side effect, before, during and after journal writes — and resumed each time
 * by a new process from the store a {@link StoreAt} describes. Each episode's outcome is checked
 * against the run that was never killed: the same answer; no model turn requested again once its
 * message was committed; no more completed model requests than that run's plus one a kill; the
 * booking (verified) made exactly once; the notice (not verifiable) sent at most once, and
 * reported unknown when a kill left it in doubt; the idempotent lookup re-run only after kills.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startLocalProvider, type Assistant, type LocalProvider, type RecordedRequest } from '../../src/server/index.js';
import type { KillPoint, WorkerArgs, WorkerLine } from './durableAgentWorker.js';
import { effectLines } from './seatTools.js';
import type { StoreAt } from './storeAt.js';

const WORKER = fileURLToPath(new URL('./durableAgentWorker.ts', import.meta.url));

let bundled: Promise<string> | undefined;
/**
 * The worker bundled once per spec run by esbuild (its packages left to node_modules), beside
 * the project's packages so that they resolve: a process then starts in a fraction of the time
 * tsx takes to compile the sources again for each of the specs' 75 processes. Named by the
 * checkout's path, so that two checkouts sharing node_modules do not share it.
 */
function workerBundle(): Promise<string> {
  bundled ??= (async () => {
    const { build } = await import('esbuild');
    const root = fileURLToPath(new URL('../../', import.meta.url));
    const outfile = join(
      root,
      'node_modules',
      '.cache',
      'rxheal-specs',
      `durableAgentWorker-${createHash('sha256').update(root).digest('hex').slice(0, 12)}.mjs`,
    );
    await build({ entryPoints: [WORKER], outfile, bundle: true, platform: 'node', format: 'esm', target: 'node20', packages: 'external', logLevel: 'silent' });
    return outfile;
  })();
  return bundled;
}

/** The answer: long enough to be killed in the middle of. */
export const ANSWER = `Seat 1A was free; it is booked and you have been texted.${Array.from({ length: 30 }, (_, i) => ` w${i + 1}`).join('')}`;

/** lookup → book → notify → the answer: one tool a turn, by how many tool results the conversation holds. */
export const assistant: Assistant = (request) => {
  const results = request.messages.filter((m) => m.role === 'tool').length;
  if (results === 0) return { toolCalls: [{ name: 'lookup', args: { seat: '1A' } }] };
  if (results === 1) return { toolCalls: [{ name: 'book', args: { seat: '1A' } }] };
  if (results === 2) return { toolCalls: [{ name: 'notify', args: { text: 'Seat 1A is booked.' } }] };
  return { text: ANSWER };
};

/** What one process printed, and how it ended. */
export interface Life {
  readonly lines: readonly WorkerLine[];
  readonly killed: boolean;
  readonly code: number | null;
}

/** Runs one worker process to its end (its own kill, or the run's). */
export async function live(args: WorkerArgs): Promise<Life> {
  return spawnLife(await workerBundle(), args);
}

/**
 * Runs one process of `worker` (a bundled script, its one argument `args` as JSON) to its end:
 * its JSON lines on stdout read (other lines — an engine's own logging — left out), SIGKILL its
 * planned end. `env` is added to the process's environment.
 */
export function spawnLife(worker: string, args: object, env: Readonly<Record<string, string>> = {}): Promise<Life> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [worker, JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    const lines: WorkerLine[] = [];
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.startsWith('{"')) lines.push(JSON.parse(line) as WorkerLine);
    });
    child.once('error', reject);
    child.once('close', (code, signal) => {
      if (signal !== 'SIGKILL' && code !== 0) reject(new Error(`worker exited ${code}: ${stderr.slice(-2000)}`));
      else resolve({ lines, killed: signal === 'SIGKILL', code });
    });
  });
}

/** One store's world: fresh providers (faults on) and an effects folder per run. */
export interface Episode {
  readonly runId: string;
  readonly lives: readonly Life[];
  readonly requests: readonly RecordedRequest[];
  readonly effects: Readonly<Record<'lookup' | 'book' | 'notify', readonly string[]>>;
}

/** The two providers of an episode: the primary answers 503 once and cuts one stream; the secondary is sound. */
export async function providers(): Promise<{ primary: LocalProvider; secondary: LocalProvider }> {
  const primary = await startLocalProvider({
    name: 'primary',
    assistant,
    tokenDelayMs: 5,
    faults: [
      { kind: 'status', status: 503, times: 1 },
      { kind: 'reset', afterChunks: 12, times: 1 },
    ],
  });
  const secondary = await startLocalProvider({ name: 'secondary', assistant, tokenDelayMs: 5 });
  return { primary, secondary };
}

let unique = 0;

/** Runs one run to its end, killing its processes at `kills` in turn (each a new process resuming the last one's run). */
export async function episode(store: StoreAt, kills: readonly KillPoint[], leaseMs = 1_000): Promise<Episode> {
  const { primary, secondary } = await providers();
  const effects = mkdtempSync(join(tmpdir(), 'rxheal-effects-'));
  const runId = `kill-${process.pid}-${Date.now()}-${++unique}`;
  try {
    mkdirSync(effects, { recursive: true });
    const base = { store, runId, primary: primary.url, secondary: secondary.url, effects, leaseMs };
    const lives: Life[] = [];
    for (const kill of kills) lives.push(await live({ ...base, kill }));
    lives.push(await live(base));
    const read = (tool: string): string[] => effectLines(effects, tool);
    return {
      runId,
      lives,
      requests: [...primary.requests, ...secondary.requests],
      effects: { lookup: read('lookup'), book: read('book'), notify: read('notify') },
    };
  } finally {
    await Promise.all([primary.close(), secondary.close()]);
    rmSync(effects, { recursive: true, force: true });
  }
}

/** How many tool results a request's conversation holds: which turn it asks for (0 → lookup … 3 → the answer). */
function turnOf(request: RecordedRequest): number {
  const body = request.body as { messages?: { role: string }[] } | undefined;
  return (body?.messages ?? []).filter((m) => m.role === 'tool').length;
}

/**
 * The checks of one killed episode against the unkilled `baseline`: see the module's comment.
 * `kills` are the points planned for it.
 */
export function checkEpisode(run: Episode, baseline: Episode, kills: readonly KillPoint[]): void {
  const last = run.lives.at(-1)!;
  const end = last.lines.find((l): l is Extract<WorkerLine, { done: string }> => 'done' in l);
  expect(end, JSON.stringify(last.lines.slice(-5))).to.deep.include({ done: 'answer', text: ANSWER });
  // every planned kill happened, where it was planned
  const killedAt = run.lives.slice(0, -1).map((life) => life.lines.find((l): l is Extract<WorkerLine, { kill: KillPoint }> => 'kill' in l)?.kill);
  expect(killedAt, 'each process but the last killed at its point').to.deep.equal(kills);
  expect(run.lives.slice(0, -1).every((l) => l.killed)).to.equal(true);

  // a turn whose assistant message a process saw committed (its `message` event, live) is never requested again after it
  const committed = new Map<number, number>();
  for (const life of run.lives) {
    let results = 0;
    for (const line of life.lines) {
      if (!('event' in line) || line.event !== 'message') continue;
      if (line.role === 'tool') results++;
      // the first `message` event of a turn, live or replayed, comes after its record was committed
      if (line.role === 'assistant') committed.set(results, Math.min(committed.get(results) ?? line.at, line.at));
    }
  }
  for (const request of run.requests) {
    const at = committed.get(turnOf(request));
    if (at !== undefined) expect(request.startedAt, `turn ${turnOf(request)} requested again after its message was committed`).to.be.at.most(at);
  }
  const completed = (e: Episode): number => e.requests.filter((r) => r.end === 'completed' && r.status === 200).length;
  expect(completed(run), 'completed model requests').to.be.at.most(completed(baseline) + kills.length);

  // side effects
  expect(run.effects.book, 'the verified booking: exactly once').to.have.length(1);
  expect(run.effects.notify.length, 'the notice: at most once').to.be.at.most(1);
  const unknown = run.lives.some((life) => life.lines.some((l) => 'event' in l && l.event === 'tool-outcome-unknown' && l.name === 'notify'));
  const inDoubt = kills.some((k) => k.at === 'effect' && k.tool === 'notify');
  if (inDoubt) expect(unknown, 'killed inside notify: its outcome reported unknown (it is never re-run blindly)').to.equal(true);
  if (!unknown) expect(run.effects.notify, 'the notice, no kill left it in doubt: once').to.have.length(1);
  expect(run.effects.lookup.length, 'the idempotent lookup: once, again only after a kill').to.be.within(1, 1 + kills.length);
}
