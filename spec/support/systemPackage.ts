/**
 * Specs that need a program from the system (Debian's `chromium`, `redis-server`): outside CI a
 * missing program skips the suite with a printed notice saying how to enable it; under `CI=true`
 * it is required, and its absence fails the suite.
 */
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** A program a spec needs, and how a user installs it. */
export interface SystemProgram {
  /** What the notice calls it, e.g. `Chromium`. */
  readonly name: string;
  /** An explicit path (e.g. from `CHROMIUM_PATH`), else the command searched on `PATH`. */
  readonly path?: string;
  /** The command to find on `PATH` when `path` is not given, e.g. `redis-server`. */
  readonly command?: string;
  /** How to install it, e.g. `apt-get install chromium (or set CHROMIUM_PATH)`. */
  readonly install: string;
}

/** Where the program is, or undefined. */
export function findProgram(program: SystemProgram): string | undefined {
  if (program.path !== undefined) return existsSync(program.path) ? program.path : undefined;
  const command = program.command ?? program.name;
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, command);
    if (existsSync(candidate)) return candidate;
  }
  for (const dir of ['/usr/bin', '/usr/sbin', '/usr/local/bin']) if (existsSync(join(dir, command))) return join(dir, command);
  return undefined;
}

/** True when running under CI (`CI` set to anything but `''`, `0` or `false`). */
export function underCi(): boolean {
  const ci = process.env['CI'];
  return ci !== undefined && ci !== '' && ci !== '0' && ci.toLowerCase() !== 'false';
}

/**
 * Call in a suite's `before(function () { … })`: returns the program's path, or skips the suite
 * with a printed notice when it is missing outside CI; under CI a missing program throws.
 */
export function requireProgram(context: Mocha.Context, program: SystemProgram): string {
  const found = findProgram(program);
  if (found !== undefined) return found;
  const where = program.path ?? program.command ?? program.name;
  if (underCi()) throw new Error(`${program.name} not found (${where}), and CI requires it: ${program.install}`);
  console.log(`\n  [skipped] ${context.test?.parent?.fullTitle() ?? 'suite'}: ${program.name} not found (${where}). To run it: ${program.install}\n`);
  context.skip();
}
