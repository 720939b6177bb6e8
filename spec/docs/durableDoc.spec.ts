/**
 * The program of marble-docs/durable.md is run as a user runs it (node, tsx, the built package
 * through its own name) and prints exactly the ```text block that follows it: a run suspended
 * for approval, resumed with it in a new journal over the same directory, then replayed whole.
 * (spec/docs/snippets.spec.ts compiles every block of the page.)
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = new URL('../../', import.meta.url).pathname;
const RUN_DIR = join(ROOT, 'spec', 'docs', '__durable_run__');
const PAGE = 'marble-docs/durable.md';

/** Each ```ts block directly followed (blank lines apart) by a ```text block: the program and what it prints. */
function programs(markdown: string): { line: number; code: string; output: string }[] {
  const blocks: { lang: string; line: number; body: string }[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(\w+)\s*$/.exec(lines[i]!);
    if (!fence) continue;
    const line = i + 1;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i]!);
    blocks.push({ lang: fence[1]!, line, body: body.join('\n') });
  }
  return blocks.flatMap((b, i) => (b.lang === 'ts' && blocks[i + 1]?.lang === 'text' ? [{ line: b.line, code: b.body, output: blocks[i + 1]!.body }] : []));
}

describe('marble-docs/durable.md: its program prints what the page says it prints', function () {
  this.timeout(120_000);
  const found = programs(readFileSync(join(ROOT, PAGE), 'utf8'));

  before(() => {
    expect(existsSync(join(ROOT, 'dist', 'durable', 'index.js')), 'dist/ is built (npm test builds first; else npm run build)').to.equal(true);
    mkdirSync(RUN_DIR, { recursive: true });
  });
  after(() => rmSync(RUN_DIR, { recursive: true, force: true }));

  it('finds the program', () => expect(found.length).to.equal(1));

  found.forEach((program, i) => {
    it(`${PAGE}:${program.line} prints the block after it`, async () => {
      const file = join(RUN_DIR, `program-${i}.ts`);
      writeFileSync(file, program.code);
      const { code, out, err } = await new Promise<{ code: number; out: string; err: string }>((done) =>
        execFile(process.execPath, ['--import', 'tsx', file], { cwd: ROOT, timeout: 60_000 }, (error, stdout, stderr) =>
          done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, out: stdout, err: stderr }),
        ),
      );
      expect(err, `${PAGE}: stderr`).to.equal('');
      expect(code, PAGE).to.equal(0);
      expect(out.trimEnd()).to.equal(program.output.trimEnd());
    });
  });
});
