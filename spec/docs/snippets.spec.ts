/**
 * Every ```ts block of README.md, the guides (docs/guides/*.md) and marble-docs/*.md is a complete program, as a user would paste
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
import { importsEngine, importsFramework } from '../support/agentFrameworks.js';
import { SNIPPET_OPTIONS, tsBlocks, type Snippet } from '../support/tsBlocks.js';

const ROOT = new URL('../../', import.meta.url).pathname;
/** Where the snippets pretend to live: inside the package, so its name resolves to itself. */
const VIRTUAL = join(ROOT, 'spec', 'docs', '__snippets__');

function pages(): string[] {
  const dir = (name: string): string[] =>
    readdirSync(join(ROOT, name))
      .filter((f) => f.endsWith('.md'))
      .sort()
      .map((f) => join(ROOT, name, f));
  return [join(ROOT, 'README.md'), ...dir('docs/guides'), ...dir('marble-docs')];
}

const blocks = pages().flatMap((path) => tsBlocks(relative(ROOT, path), readFileSync(path, 'utf8')));
// the agent frameworks' blocks and the engines' import packages only spec/support/majors has (Node ≥ 22):
// spec/docs/agentFrameworks.spec.ts and spec/docs/durableEngines.spec.ts compile them against those packages, and run them
const elsewhere = (code: string): boolean => importsFramework(code) || importsEngine(code);
const snippets = blocks.filter((s) => !elsewhere(s.code));
const left = blocks.filter((s) => elsewhere(s.code));
const fileOf = (s: Snippet): string => join(VIRTUAL, `${s.page.replace(/[^A-Za-z0-9]+/g, '_')}_${s.line}.ts`);

const options: ts.CompilerOptions = { ...SNIPPET_OPTIONS, noFallthroughCasesInSwitch: true };

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

describe('README, guides and marble-docs ```ts snippets (complete, and compiled against the built package)', function () {
  this.timeout(60_000);
  let diagnostics = new Map<string, string[]>();

  before(() => {
    expect(existsSync(join(ROOT, 'dist', 'index.d.ts')), 'dist/ is built (npm test builds first; else npm run build)').to.equal(true);
    diagnostics = compile();
  });

  it(`leaves the agent frameworks' and the engines' blocks to their specs (${left.map((s) => `${s.page}:${s.line}`).join(', ')})`, () => {
    expect(left.map((s) => s.page)).to.deep.equal([
      'docs/guides/durable-engines.md',
      'docs/guides/durable-engines.md',
      'docs/guides/frameworks.md',
      'docs/guides/frameworks.md',
    ]);
  });

  it('finds snippets in the README, in the guides and in the marble-docs pages', () => {
    expect(snippets.filter((s) => s.page === 'README.md').length).to.be.at.least(2);
    expect(snippets.filter((s) => s.page.startsWith('docs/guides/')).length).to.be.greaterThan(10);
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
