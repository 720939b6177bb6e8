/**
 * Every ```ts block of README.md and marble-docs/*.md is a complete program, as a user would paste
 * it: its imports included, nothing declared out of thin air. All of them are typechecked in one
 * TypeScript program (strict) against the built package, through the package's own name
 * ('rxheal', 'rxheal/testing', … resolve by self-reference through the exports map, exactly as in
 * a consumer), so a snippet that names something the package no longer exports fails here.
 * New pages and new blocks are picked up by themselves.
 */
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const ROOT = new URL('../../', import.meta.url).pathname;
/** Where the snippets pretend to live: inside the package, so its name resolves to itself. */
const VIRTUAL = join(ROOT, 'spec', 'docs', '__snippets__');

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

function pages(): string[] {
  const docs = join(ROOT, 'marble-docs');
  return [join(ROOT, 'README.md'), ...readdirSync(docs).filter((f) => f.endsWith('.md')).sort().map((f) => join(docs, f))];
}

const snippets = pages().flatMap((path) => tsBlocks(relative(ROOT, path), readFileSync(path, 'utf8')));
const fileOf = (s: Snippet): string => join(VIRTUAL, `${s.page.replace(/[^A-Za-z0-9]+/g, '_')}_${s.line}.ts`);

const options: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  moduleDetection: ts.ModuleDetectionKind.Force,
  lib: ['lib.es2022.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
  types: ['node'],
  strict: true,
  noEmit: true,
  skipLibCheck: true,
  noFallthroughCasesInSwitch: true,
};

/** Diagnostics per snippet file, from one program over all of them. */
function compile(): Map<string, string[]> {
  const files = new Map(snippets.map((s) => [fileOf(s), s.code]));
  const snippetOf = new Map(snippets.map((s) => [fileOf(s), s]));
  const host = ts.createCompilerHost(options);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (f) => files.has(f) || fileExists.call(host, f);
  host.readFile = (f) => files.get(f) ?? readFile.call(host, f);
  host.getSourceFile = (f, version, onError, create) =>
    files.has(f) ? ts.createSourceFile(f, files.get(f)!, version, true, ts.ScriptKind.TS) : getSourceFile.call(host, f, version, onError, create);
  const program = ts.createProgram([...files.keys()], options, host);
  const byFile = new Map<string, string[]>([...files.keys()].map((f) => [f, []]));
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    const list = d.file ? byFile.get(d.file.fileName) : undefined;
    const snippet = d.file ? snippetOf.get(d.file.fileName) : undefined;
    if (list && d.file && snippet) list.push(`${snippet.page}:${snippet.line + d.file.getLineAndCharacterOfPosition(d.start ?? 0).line} TS${d.code}: ${text}`);
    else byFile.get([...files.keys()][0]!)!.push(`${d.file?.fileName ?? 'program'} TS${d.code}: ${text}`);
  }
  return byFile;
}

describe('README and marble-docs ```ts snippets (complete, and compiled against the built package)', function () {
  this.timeout(60_000);
  let diagnostics = new Map<string, string[]>();

  before(() => {
    expect(existsSync(join(ROOT, 'dist', 'index.d.ts')), 'dist/ is built (npm test builds first; else npm run build)').to.equal(true);
    diagnostics = compile();
  });

  it('finds snippets in the README and in the marble-docs pages', () => {
    expect(snippets.filter((s) => s.page === 'README.md').length).to.be.greaterThan(2);
    expect(snippets.filter((s) => s.page.startsWith('marble-docs/')).length).to.be.greaterThan(2);
  });

  for (const snippet of snippets) {
    const where = `${snippet.page}:${snippet.line}`;
    it(`${where} is complete and compiles`, () => {
      // complete: it imports what it uses (the package, or — in a "before" example — the user's own framework)
      expect(snippet.code, `${where}: imports what it uses`).to.match(/^(import|\}) .*from '[@\w][^']*';$/m);
      expect(snippet.code, `${where}: declares nothing out of thin air (define it, or import it)`).not.to.match(/^\s*declare\s/m);
      expect(diagnostics.get(fileOf(snippet)), where).to.deep.equal([]);
    });
  }
});
