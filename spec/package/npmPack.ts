/**
 * The published package as npm sees it: `npm pack` (the tarball, or only its file list), the
 * exports map's entry points, and the README's table of subpaths and their optional peers.
 * Used by spec/package.spec.ts, spec/package/pack.spec.ts and spec/docs/links.spec.ts.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const ROOT = new URL('../../', import.meta.url).pathname;

export interface PackageJson {
  readonly name: string;
  readonly exports: Record<string, string | Record<string, string>>;
  readonly peerDependencies?: Record<string, string>;
  readonly peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  readonly devDependencies?: Record<string, string>;
  readonly [key: string]: unknown;
}

export function packageJson(): PackageJson {
  return JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as PackageJson;
}

/** The environment for a child `npm`: without the `npm_*` variables of an enclosing `npm test`. */
export function npmEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith('npm_')));
}

interface PackResult {
  readonly filename: string;
  readonly files: readonly { readonly path: string }[];
}

/**
 * `npm pack` of the working tree, without running `prepack` (`npm test` has just built dist/):
 * the tarball written to `destination`, or with `destination` undefined only the file list.
 */
export function npmPack(destination?: string): { tarball?: string; files: Set<string> } {
  const args = ['pack', '--ignore-scripts', '--json', ...(destination === undefined ? ['--dry-run'] : ['--pack-destination', destination])];
  const out = execFileSync('npm', args, { cwd: ROOT, env: npmEnv(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const [result] = JSON.parse(out) as PackResult[];
  if (!result) throw new Error(`npm pack printed no result: ${out}`);
  return {
    ...(destination === undefined ? {} : { tarball: join(destination, result.filename) }),
    files: new Set(result.files.map((f) => f.path)),
  };
}

/** One code entry point of the exports map: its specifier (`rxheal/otel`) and its built files. */
export interface EntryPoint {
  readonly specifier: string;
  readonly conditions: Record<string, string>;
}

/** Every entry point of the exports map that is code (not `./package.json`), in map order. */
export function entryPoints(pkg: PackageJson = packageJson()): EntryPoint[] {
  return Object.entries(pkg.exports)
    .filter(([, target]) => typeof target !== 'string' || target.endsWith('.js'))
    .map(([key, target]) => ({
      specifier: key === '.' ? pkg.name : `${pkg.name}/${key.slice(2)}`,
      conditions: typeof target === 'string' ? { default: target } : target,
    }));
}

/**
 * The pages the package specs read, relative to the repository: the README (its Install section
 * and table of entry points), the install guide (the versions table), the frameworks guide (the
 * agent frameworks' install lines and snippets) and the MCP guide (the proxy's `npx` lines and a
 * host's configuration).
 */
export const PAGES = {
  readme: 'README.md',
  install: 'docs/guides/install.md',
  frameworks: 'docs/guides/frameworks.md',
  mcp: 'docs/guides/mcp-tools.md',
} as const;

/** A page of the docs, by its path relative to the repository. */
export const page = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

/** The pages a user copies commands from: the README and every guide. */
export function userPages(): string[] {
  const guides = readdirSync(join(ROOT, 'docs', 'guides'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/guides/${f}`);
  return [PAGES.readme, ...guides];
}

/** One row of the README's "Entry points" table. */
export interface SubpathRow {
  readonly specifier: string;
  /** The optional peers it needs (`[]`: none). */
  readonly peers: string[];
  /** The install cell, as written. */
  readonly install: string;
  readonly line: number;
}

/**
 * The README's table of entry points: rows whose first cell is a code span naming the package or
 * one of its subpaths (`| \`rxheal/otel\` | … | \`@opentelemetry/api\` | \`npm install …\` |`);
 * the third cell names the optional peers (`—` for none), the fourth how to install them.
 */
export function subpathTable(readme: string = readFileSync(join(ROOT, 'README.md'), 'utf8'), name = packageJson().name): SubpathRow[] {
  const rows: SubpathRow[] = [];
  readme.split('\n').forEach((line, i) => {
    const cells = line.split('|').map((c) => c.trim());
    // '', first, second, third, fourth, ''
    if (cells.length < 6 || cells[0] !== '') return;
    const specifier = /^`([^`]+)`$/.exec(cells[1]!)?.[1];
    if (specifier === undefined || (specifier !== name && !specifier.startsWith(`${name}/`))) return;
    const peers = [...cells[3]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    rows.push({ specifier, peers, install: cells[4]!, line: i + 1 });
  });
  return rows;
}

/** The examples the package ships (its `files` entries under examples/). */
export const shippedExamples = (pkg: PackageJson = packageJson()): string[] =>
  ((pkg['files'] ?? []) as string[]).filter((f) => /^examples\/[^/]+\.ts$/.test(f));

/** Every module specifier a TypeScript file imports (static and dynamic). */
export function importsOf(code: string): string[] {
  return [...code.matchAll(/(?:^import\b[^'"]*?\bfrom\s*|^import\s*|\bimport\(\s*)'([^']+)'/gm)].map((m) => m[1]!);
}

/** The package a bare specifier names (`@scope/name` or `name`), or undefined for a relative or `node:` one. */
export function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('node:')) return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** The file `npm pack` writes for this package (`rxheal-0.1.0.tgz`), as the README names it. */
export function tarballName(pkg: PackageJson = packageJson()): string {
  return `${pkg.name}-${String(pkg['version'])}.tgz`;
}

/** Whether a word of a README command is the packed tarball's path (`/path/to/rxheal-0.1.0.tgz`). */
export const isTarball = (word: string, pkg: PackageJson = packageJson()): boolean => word.split('/').at(-1) === tarballName(pkg);

/** A README command with the tarball's path (`/path/to/rxheal-0.1.0.tgz`) replaced by `path`. */
export const withTarball = (command: string, path: string, pkg: PackageJson = packageJson()): string =>
  command
    .split(/\s+/)
    .map((w) => (isTarball(w, pkg) ? path : w))
    .join(' ');

/** The commands of the ```sh blocks between two lines of the README (0-based, end excluded), with their 1-based line numbers. */
function shellLines(lines: readonly string[], from: number, to: number): { command: string; line: number }[] {
  const out: { command: string; line: number }[] = [];
  let fenced = false;
  for (let i = from; i < to; i++) {
    const text = lines[i]!;
    if (text.startsWith('```')) fenced = !fenced && text === '```sh';
    else if (fenced && text.trim() !== '') out.push({ command: text.trim(), line: i + 1 });
  }
  return out;
}

/** The README's "Install" section: its line range (0-based, to the next `## ` heading). */
function installSection(lines: readonly string[]): { start: number; end: number } {
  const start = lines.findIndex((l) => l === '## Install');
  if (start < 0) throw new Error('README.md has no "## Install" section');
  const next = lines.findIndex((l, i) => i > start && l.startsWith('## '));
  return { start, end: next < 0 ? lines.length : next };
}

/**
 * The line of the README's "Install" section that packs the package in a clone of the repository
 * (`npm pack`: rxheal is not on the registry yet).
 */
export function packLine(readme: string = readFileSync(join(ROOT, 'README.md'), 'utf8')): { command: string; line: number } {
  const lines = readme.split('\n');
  const { start, end } = installSection(lines);
  const pack = shellLines(lines, start, end).filter((l) => l.command.startsWith('npm pack'));
  if (pack.length !== 1) throw new Error(`README.md's "Install" section has ${pack.length} npm pack lines, not one`);
  return pack[0]!;
}

/**
 * The `npm install` commands of the README's "Install" section, as written: its code blocks'
 * (`npm install /path/to/rxheal-0.1.0.tgz rxjs io-ts`) and each entry-point row's install cell, in order.
 */
export function installLines(readme: string = readFileSync(join(ROOT, 'README.md'), 'utf8')): { command: string; for: string; line: number }[] {
  const lines = readme.split('\n');
  const { start, end } = installSection(lines);
  const root = shellLines(lines, start, end)
    .filter((l) => l.command.startsWith('npm install '))
    .map((l) => ({ ...l, for: 'the root entry' }));
  const rows = subpathTable(readme).flatMap((row) =>
    [...row.install.matchAll(/`(npm install [^`]+)`/g)].map((m) => ({ command: m[1]!, for: row.specifier, line: row.line })),
  );
  return [...root, ...rows];
}

/** The `npx` lines of a page (the MCP guide's by default: the package's bin, `rxheal-mcp-proxy`), from every ```sh block. */
export function npxLines(readme: string = page(PAGES.mcp)): { command: string; line: number }[] {
  const lines = readme.split('\n');
  return shellLines(lines, 0, lines.length).filter((l) => l.command.startsWith('npx '));
}

/** The MCP host configurations of a page (the MCP guide's by default; ```json blocks with `mcpServers`): each server's command and arguments, as written. */
export function hostConfigs(readme: string = page(PAGES.mcp)): { name: string; command: string; args: string[]; line: number }[] {
  const out: { name: string; command: string; args: string[]; line: number }[] = [];
  for (const m of readme.matchAll(/```json\n([\s\S]*?)```/g)) {
    if (!m[1]!.includes('"mcpServers"')) continue;
    const line = readme.slice(0, m.index).split('\n').length + 1;
    const config = JSON.parse(m[1]!) as { mcpServers: Record<string, { command: string; args?: string[] }> };
    for (const [name, server] of Object.entries(config.mcpServers)) out.push({ name, command: server.command, args: server.args ?? [], line });
  }
  return out;
}

/**
 * Every command of a page that installs or runs a package (`npm install …`, `npx …`, in code
 * blocks and code spans), as written.
 */
export function packageCommands(readme: string = readFileSync(join(ROOT, 'README.md'), 'utf8')): { command: string; line: number }[] {
  const lines = readme.split('\n');
  const blocks = shellLines(lines, 0, lines.length).filter((l) => /^(npm install|npx) /.test(l.command));
  const spans = lines.flatMap((text, i) => [...text.matchAll(/`((?:npm install|npx) [^`]+)`/g)].map((m) => ({ command: m[1]!, line: i + 1 })));
  return [...blocks, ...spans].sort((a, b) => a.line - b.line);
}

/**
 * The agent-framework table of the frameworks guide (`| framework | through | install (Node ≥ 22) | tested |`):
 * each row's framework and whole install line (`npm install /path/to/rxheal-0.1.0.tgz rxjs @openai/agents …`), with
 * the entries the line is for — `rxheal/ai-sdk` and each framework package it names — to load.
 */
export function frameworkLines(readme: string = page(PAGES.frameworks)): { framework: string; command: string; line: number }[] {
  const lines = readme.split('\n');
  const header = lines.findIndex((l) => l.startsWith('| framework | through | install (Node ≥ 22) |'));
  if (header < 0) throw new Error(`${PAGES.frameworks} has no agent-framework table ("| framework | through | install (Node ≥ 22) | tested |")`);
  const out: { framework: string; command: string; line: number }[] = [];
  for (let i = header + 2; i < lines.length && lines[i]!.startsWith('|'); i++) {
    const cells = lines[i]!.split('|').map((c) => c.trim());
    const command = /`(npm install [^`]+)`/.exec(cells[3] ?? '')?.[1];
    if (command === undefined) throw new Error(`${PAGES.frameworks}:${i + 1}: an agent-framework row without an install line`);
    out.push({ framework: cells[1]!, command, line: i + 1 });
  }
  return out;
}

/**
 * Loads each specifier in a plain `node` child (ESM `import()` or CommonJS `require`), without the
 * spec's tsx loader, as a user's program would: its export names, or the error. `node` is the
 * binary to run (the spec's own by default).
 */
export function loadEntries(cwd: string, system: 'esm' | 'cjs', specifiers: string[], node: string = process.execPath): Record<string, string[] | string> {
  const body = `const out = {};
for (const s of JSON.parse(process.argv[1])) {
  try { out[s] = Object.keys(${system === 'esm' ? 'await import(s)' : 'require(s)'}).sort(); } catch (e) { out[s] = String(e.code ?? '') + ' ' + e.message; }
}
console.log(JSON.stringify(out));`;
  const args = system === 'esm' ? ['--input-type=module', '-e', body] : ['--input-type=commonjs', '-e', body];
  const out = execFileSync(node, [...args, JSON.stringify(specifiers)], { cwd, encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '' } });
  return JSON.parse(out) as Record<string, string[] | string>;
}

/** Every entry loads and exports something; ESM and CommonJS see the same names. */
export function expectLoaded(
  esm: Record<string, string[] | string>,
  cjs: Record<string, string[] | string>,
  list: readonly { readonly specifier: string }[],
): void {
  for (const { specifier } of list) {
    expect(esm[specifier], `import('${specifier}')`).to.be.an('array').that.is.not.empty;
    expect(cjs[specifier], `require('${specifier}') (each entry needs a "default" condition for require(esm))`).to.be.an('array').that.is.not.empty;
    expect(cjs[specifier], `require('${specifier}') and import('${specifier}') export the same names`).to.deep.equal(esm[specifier]);
  }
}

/** One row of the install guide's "needs | versions | tested" table (Node, rxjs and each optional peer). */
export interface VersionsRow {
  /** `Node`, or the package a code span names (`ai`). */
  readonly name: string;
  readonly versions: string;
  readonly tested: string;
  readonly line: number;
}

/** The install guide's versions table: the rows after its `| needs | versions | tested |` header. */
export function versionsTable(readme: string = page(PAGES.install)): VersionsRow[] {
  const lines = readme.split('\n');
  const header = lines.findIndex((l) => /^\|\s*needs\s*\|\s*versions\s*\|\s*tested\s*\|$/.test(l));
  if (header < 0) throw new Error(`${PAGES.install} has no "| needs | versions | tested |" table`);
  const rows: VersionsRow[] = [];
  for (let i = header + 2; i < lines.length && lines[i]!.startsWith('|'); i++) {
    const cells = lines[i]!.split('|').map((c) => c.trim());
    rows.push({ name: /^`([^`]+)`$/.exec(cells[1]!)?.[1] ?? cells[1]!, versions: cells[2]!, tested: cells[3]!, line: i + 1 });
  }
  return rows;
}
