/**
 * The frameworks' newest majors for the adapter specs: AI SDK 7 (`ai` 7, `@ai-sdk/provider` 4 and
 * the provider packages of that line) and `openai` 7, as npm aliases (`"ai-7": "npm:ai@^7"`…) in
 * the small project spec/support/majors — not in the project's own devDependencies, because they
 * need Node ≥ 22 and `npm install` on Node 20 must not warn about an engine it lacks.
 *
 * {@link nextMajors} installs that project (`npm ci` from its lockfile, again whenever the lockfile
 * changed) and loads it, on Node ≥ 22; on Node 20 it gives the reason instead, and the specs of
 * the 7.x lines are reported as skipped — `.ci/run` runs them on Node 22 and Node 24. An install
 * that fails is an error under `CI`, a printed notice and a skip otherwise.
 *
 * The same project holds the agent frameworks (the OpenAI Agents SDK, Mastra 1.x; they need Node
 * ≥ 22 too), loaded apart through majors/agents.mjs by spec/support/agentFrameworks.ts, and the
 * durable-execution engines (DBOS, Restate's SDK and server), which {@link majorsProject} installs
 * for spec/support/engineKills.ts without loading the rest.
 *
 * The modules are typed with the 6.x lines' types (the same names, the parts the specs use have
 * the same shape); what only the 7.x lines have is typed where a spec uses it.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const DIR = fileURLToPath(new URL('./majors/', import.meta.url));
const STAMP = join(DIR, 'node_modules', '.rxheal-lock-hash');

/** The 7.x lines, loaded (typed as the 6.x lines: see the module's doc). */
export interface NextMajors {
  readonly ai: typeof import('ai');
  readonly aiTest: typeof import('ai/test');
  readonly provider: typeof import('@ai-sdk/provider');
  readonly openaiCompatible: typeof import('@ai-sdk/openai-compatible');
  readonly aiOpenAI: typeof import('@ai-sdk/openai');
  readonly aiAnthropic: typeof import('@ai-sdk/anthropic');
  readonly aiGoogle: typeof import('@ai-sdk/google');
  readonly OpenAI: typeof import('openai').default;
  /** The installed versions, by package name (`ai`, `openai`…), for the specs' titles. */
  readonly versions: Readonly<Record<string, string>>;
}

/** What the 7.x specs run with, or why they can't run on this machine. */
export type NextMajorsResult = { readonly ok: true; readonly majors: NextMajors } | { readonly ok: false; readonly reason: string };

const NODE_MAJOR = Number(process.versions.node.split('.')[0]);

/** A lock held while one process installs (the suite's parallel lane runs several spec files at once). */
const LOCK = join(DIR, '.install-lock');

const lockHash = (): string =>
  createHash('sha256')
    .update(readFileSync(join(DIR, 'package-lock.json')))
    .digest('hex');

/**
 * spec/support/majors's folder when its node_modules came from its lockfile (a spec on Node ≥ 22
 * installed them), without installing anything: for a process on Node 20 that starts one on 24.
 */
export function majorsInstalled(): string | undefined {
  return existsSync(STAMP) && readFileSync(STAMP, 'utf8') === lockHash() ? DIR : undefined;
}

/**
 * `npm ci` in spec/support/majors, unless its node_modules came from this very lockfile. One
 * process installs at a time (a directory made atomically is the lock; one older than the
 * install's timeout is a dead holder's, taken over); the others wait for it, then find the stamp.
 */
function install(): void {
  const lock = lockHash();
  const fresh = (): boolean => existsSync(STAMP) && readFileSync(STAMP, 'utf8') === lock;
  if (fresh()) return;
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      if (fresh()) return;
      const held = statSync(LOCK, { throwIfNoEntry: false });
      if (held !== undefined && Date.now() - held.mtimeMs > 330_000) rmSync(LOCK, { recursive: true, force: true });
      else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 250);
    }
  }
  try {
    if (fresh()) return;
    execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: DIR, stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000 });
    writeFileSync(STAMP, lock);
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

function versionsOf(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const alias of [
    'ai-7',
    '@ai-sdk/provider-4',
    '@ai-sdk/openai-compatible-3',
    '@ai-sdk/openai-4',
    '@ai-sdk/anthropic-4',
    '@ai-sdk/google-4',
    'openai-7',
  ]) {
    const pkg = JSON.parse(readFileSync(join(DIR, 'node_modules', alias, 'package.json'), 'utf8')) as { name: string; version: string };
    out[pkg.name] = pkg.version;
  }
  return out;
}

let loading: Promise<NextMajorsResult> | undefined;
const noticed = new Set<string>();

/**
 * The 7.x lines (installed on first use), or the reason they can't run here. Prints the reason
 * once, as every skip with a cause does.
 */
export function nextMajors(): Promise<NextMajorsResult> {
  loading ??= (async (): Promise<NextMajorsResult> => {
    const project = majorsProject('AI SDK 7 and openai 7', 'Node 22 and Node 24');
    if (!project.ok) return project;
    const loaded = (await import(pathToFileURL(join(DIR, 'load.mjs')).href)) as Omit<NextMajors, 'versions'>;
    return { ok: true, majors: { ...loaded, versions: versionsOf() } };
  })();
  return loading.then((result) => {
    if (!result.ok && !noticed.has(result.reason)) {
      noticed.add(result.reason);
      console.log(`  (skipped: the 7.x lines' specs — ${result.reason})`);
    }
    return result;
  });
}

/**
 * spec/support/majors installed (its folder), without loading anything of it — or why it can't
 * be here: Node < 22, or (outside `CI`, where it throws) an install that failed.
 */
export function majorsProject(what: string, lines: string): { readonly ok: true; readonly dir: string } | { readonly ok: false; readonly reason: string } {
  if (NODE_MAJOR < 22) return { ok: false, reason: `${what} need Node ≥ 22 (this is Node ${process.versions.node}): .ci/run runs these specs on ${lines}` };
  try {
    install();
  } catch (error) {
    const detail = (error as { stderr?: Buffer }).stderr?.toString().trim().split('\n').slice(-3).join(' / ') ?? String(error);
    if (process.env['CI']) throw new Error(`spec/support/majors: npm ci failed (${detail})`, { cause: error });
    return { ok: false, reason: `could not install spec/support/majors (npm ci: ${detail})` };
  }
  return { ok: true, dir: DIR };
}
