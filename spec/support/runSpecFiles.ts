/**
 * Runs spec files the way a user's `npm test` would, in a mocha of their own (a child process,
 * tsx as the loader, the project's .mocharc.cjs left out): for specs a spec generates — a
 * downloaded replay, a pasted one — to show they pass as written, or fail when they should.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MOCHA = join(ROOT, 'node_modules', 'mocha', 'bin', 'mocha.js');

/** What the child mocha reported: a line per test, and what failed with its message. */
export interface SpecFilesRun {
  readonly passed: readonly string[];
  readonly failed: readonly { readonly title: string; readonly message: string }[];
  /** The child's exit code. */
  readonly code: number;
}

/** Runs `files` (absolute paths) in a child mocha; resolves with its counts (its JSON reporter's). */
export async function runSpecFiles(files: readonly string[], timeoutMs = 60_000): Promise<SpecFilesRun> {
  const dir = mkdtempSync(join(tmpdir(), 'rxheal-specs-'));
  const out = join(dir, 'report.json');
  try {
    const code = await new Promise<number>((resolve, reject) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', MOCHA, '--no-config', '--timeout', '20000', '--reporter', 'json', '--reporter-option', `output=${out}`, ...files],
        { cwd: ROOT, timeout: timeoutMs, env: { ...process.env, FORCE_COLOR: '0' } },
        (error, _stdout, stderr) => {
          if (error && typeof error.code !== 'number') return reject(new Error(`mocha did not run: ${error.message}\n${stderr}`));
          resolve(typeof error?.code === 'number' ? error.code : 0);
        },
      );
    });
    let report: { passes: { fullTitle: string }[]; failures: { fullTitle: string; err: { message?: string } }[] };
    try {
      report = JSON.parse(readFileSync(out, 'utf8')) as typeof report;
    } catch {
      throw new Error(`mocha (exit ${code}) wrote no report: the files did not load`);
    }
    return { passed: report.passes.map((p) => p.fullTitle), failed: report.failures.map((f) => ({ title: f.fullTitle, message: f.err.message ?? '' })), code };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
