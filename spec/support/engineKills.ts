/**
 * Agent workflows killed inside durable-execution engines and recovered by them: the kill specs'
 * seat booking (spec/support/killResume.ts's providers, its checks) as a DBOS workflow on a real
 * Postgres, or a Restate service under a real Restate server, in worker processes
 * (spec/support/engineWorker.ts) SIGKILLed at planned points — mid-tool (before and after a
 * tool's effect) and mid-answer (the nth live text delta) — each time a new process taking over:
 * DBOS recovers the workflow at its next launch, Restate retries the invocation on the new
 * process. Each episode is checked as the store-backed ones are ({@link checkEpisode}): the
 * fault-free answer; no turn requested again once its message was committed (its step
 * journaled); the verified booking once; the unverifiable notice at most once, reported unknown
 * when a kill left it in doubt.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type { KillPoint } from './durableAgentWorker.js';
import type { AiSdkWorkerLine } from './aiSdkEngineWorker.js';
import type { EngineWorkerArgs } from './engineWorker.js';
import { ANSWER, providers, spawnLife, type Episode, type Life } from './killResume.js';
import { freePort } from './redisServer.js';
import type { RestateServer } from './restateServer.js';
import { effectLines } from './seatTools.js';
import type { StoreAt } from './storeAt.js';

const WORKER = fileURLToPath(new URL('./engineWorker.ts', import.meta.url));

/** The kill plans: the lives of an episode but the last each end at a point, in the order the run reaches them. */
export const ENGINE_KILLS: readonly (readonly KillPoint[])[] = [
  [
    { at: 'effect', tool: 'lookup', phase: 'after' },
    { at: 'effect', tool: 'book', phase: 'after' },
    { at: 'delta', n: 5 },
  ],
  [
    { at: 'effect', tool: 'book', phase: 'before' },
    { at: 'effect', tool: 'notify', phase: 'after' },
    { at: 'delta', n: 20 },
  ],
];

/** A plan as a spec's title reads it: `after lookup, after book, delta 5`. */
export const planName = (kills: readonly KillPoint[]): string =>
  kills.map((k) => (k.at === 'delta' ? `delta ${k.n}` : k.at === 'effect' ? `${k.phase} ${k.tool}` : `${k.phase} append ${k.n}`)).join(', ');

const bundles = new Map<string, Promise<string>>();
/**
 * A worker script (`entry`, a spec/support file) bundled once per spec run (its packages left
 * out), into spec/support/majors's node_modules/.cache: there the engines' SDKs and `ai` 7 resolve
 * from spec/support/majors, and the project's own packages (rxjs, io-ts) from the root, above it.
 */
export function majorsBundle(entry: string, majors: string): Promise<string> {
  let bundled = bundles.get(entry);
  if (bundled === undefined) {
    bundled = (async () => {
      const { build } = await import('esbuild');
      const root = fileURLToPath(new URL('../../', import.meta.url));
      const name = basename(entry, '.ts');
      const outfile = join(majors, 'node_modules', '.cache', `${name}-${createHash('sha256').update(root).digest('hex').slice(0, 12)}.mjs`);
      await build({ entryPoints: [entry], outfile, bundle: true, platform: 'node', format: 'esm', target: 'node22', packages: 'external', logLevel: 'silent' });
      return outfile;
    })();
    bundles.set(entry, bundled);
  }
  return bundled;
}

/** The engine worker (spec/support/engineWorker.ts), bundled. */
export const engineWorkerBundle = (majors: string): Promise<string> => majorsBundle(WORKER, majors);

let unique = 0;

/** Where an episode runs: DBOS's system database, or a Restate server and the port its service is served on. */
export type EngineAt =
  { readonly engine: 'dbos'; readonly url: string } | { readonly engine: 'restate'; readonly server: RestateServer; readonly port: number };

/** One episode: the workflow run to its end, its processes killed at `kills` in turn. */
export async function engineEpisode(
  worker: string,
  at: EngineAt,
  kills: readonly KillPoint[],
  ledger?: StoreAt,
): Promise<Episode & { readonly output?: unknown }> {
  const { primary, secondary } = await providers();
  const effects = mkdtempSync(join(tmpdir(), 'rxheal-effects-'));
  const workflowId = `seat-${process.pid}-${Date.now()}-${++unique}`;
  try {
    const base = { engine: at.engine, primary: primary.url, secondary: secondary.url, effects, ...(ledger === undefined ? {} : { ledger }) };
    const lives: Life[] = [];
    let output: unknown;
    if (at.engine === 'dbos') {
      const plan = [...kills, undefined];
      for (const [i, kill] of plan.entries()) {
        const args: EngineWorkerArgs = { ...base, ...(kill ? { kill } : {}), dbos: { workflowId, url: at.url, start: i === 0 } };
        lives.push(await spawnLife(worker, args));
      }
    } else {
      let invocation: string | undefined;
      for (const kill of [...kills, undefined]) {
        const args: EngineWorkerArgs = { ...base, ...(kill ? { kill } : {}), restate: { port: at.port } };
        const life = spawnLife(worker, args);
        if (invocation === undefined) {
          await listening(at.port);
          await at.server.register(`http://127.0.0.1:${at.port}`);
          invocation = await at.server.send('seatAgent', 'run');
        }
        lives.push(await life);
      }
      output = await at.server.attach(invocation!);
    }
    const read = (tool: string): string[] => effectLines(effects, tool);
    return {
      runId: workflowId,
      lives,
      requests: [...primary.requests, ...secondary.requests],
      effects: { lookup: read('lookup'), book: read('book'), notify: read('notify') },
      ...(output === undefined ? {} : { output }),
    };
  } finally {
    await Promise.all([primary.close(), secondary.close()]);
    rmSync(effects, { recursive: true, force: true });
  }
}

/** Waits until something accepts connections on 127.0.0.1:`port` (a worker that serves). */
async function listening(port: number): Promise<void> {
  const { connect } = await import('node:net');
  for (let i = 0; i < 200; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => (socket.end(), resolve(true)));
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no worker listening on ${port}`);
}

/** A free port for a Restate service. */
export const servicePort = freePort;

/**
 * What only the engines show: the first life replays nothing; each later one replays at least
 * every turn an earlier life saw committed (its `message` event: the turn's step journaled), and
 * the last ends with the answer.
 */
export function checkReplays(run: Episode): void {
  const assistant = (life: Life, replayed?: boolean) =>
    life.lines.filter((l) => 'event' in l && l.event === 'message' && l.role === 'assistant' && (replayed === undefined || l.replayed === replayed)).length;
  let committed = 0;
  for (const [i, life] of run.lives.entries()) {
    const replayed = life.lines.filter((l) => 'event' in l && l.replayed);
    if (i === 0) expect(replayed, 'the first life replays nothing').to.deep.equal([]);
    else expect(assistant(life, true), `life ${i + 1}: the turns committed before, replayed`).to.be.at.least(committed);
    committed = Math.max(committed, assistant(life));
  }
  const last = run.lives.at(-1)!;
  expect(last.lines.some((l) => 'done' in l && l.done === 'answer' && l.text === ANSWER)).to.equal(true);
}

/** The model calls a life of spec/support/aiSdkEngineWorker.ts ran (not those the engine answered from its journal). */
export const stepsOf = (life: Life): string[] => (life.lines as unknown as AiSdkWorkerLine[]).flatMap((l) => ('step' in l ? [l.step] : []));

/** How many times `tool`'s effect happened (lines of `<tool>.log` in `dir`). */
export const effectsIn = (dir: string, tool: string): number => effectLines(dir, tool).length;
