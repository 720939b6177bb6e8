/** The ```ts blocks of a Markdown page (README.md, marble-docs/*.md), for the specs that compile and run them (spec/docs), and the options they compile with. */
import { existsSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import ts from 'typescript';

/** How a snippet compiles: as a user's strict ES module (Node's resolution: the exports maps), against @types/node. */
export const SNIPPET_OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  moduleDetection: ts.ModuleDetectionKind.Force,
  lib: ['lib.es2022.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
  types: ['node'],
  strict: true,
  noEmit: true,
  skipLibCheck: true,
};

export interface Snippet {
  /** The page, relative to the repository. */
  readonly page: string;
  /** 1-based line of the block's first code line. */
  readonly line: number;
  readonly code: string;
}

/** The ```ts (or ```typescript) blocks of one Markdown text. */
export function tsBlocks(page: string, markdown: string): Snippet[] {
  const lines = markdown.split('\n');
  const found: Snippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^(\s*)```(ts|typescript)\s*$/.exec(lines[i]!);
    if (!fence) continue;
    const start = i + 1;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i]!.trim() !== '```'; i++) body.push(lines[i]!.slice(fence[1]!.length));
    found.push({ page, line: start + 1, code: body.join('\n') });
  }
  return found;
}

/**
 * The type errors of `.ts` files of a consumer folder, compiled as a user's project would compile
 * them (strict, {@link SNIPPET_OPTIONS} and `extra`), each as `file: TS<code> message`.
 */
export function typeErrorsIn(dir: string, files: readonly string[], extra: ts.CompilerOptions = {}): string[] {
  const program = ts.createProgram(
    files.map((f) => join(dir, f)),
    { ...SNIPPET_OPTIONS, ...extra },
  );
  return ts
    .getPreEmitDiagnostics(program)
    .map((d) => `${d.file?.fileName.slice(dir.length + 1) ?? ''}: TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
}

/**
 * A consumer project for a spec: a temporary folder with a `package.json` (ESM) and, in its
 * node_modules, each package of `links` as a link to the folder named (`rxheal` to this
 * repository, a framework to spec/support/majors's copy…). Its caller removes it.
 */
export function linkedProject(prefix: string, links: Readonly<Record<string, string>>): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  for (const [name, target] of Object.entries(links)) {
    if (!existsSync(target)) throw new Error(`${name}: ${target} does not exist`);
    mkdirSync(dirname(join(dir, 'node_modules', name)), { recursive: true });
    symlinkSync(target, join(dir, 'node_modules', name), 'dir');
  }
  return dir;
}
