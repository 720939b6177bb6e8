/**
 * The programs of marble-docs/chaos.md and of the guide "Prove your agent heals" are run as a
 * user runs them (node, tsx, the built package through its own name: rxheal/chaos resolves by
 * self-reference to dist/), and each prints exactly the ```text block that follows it: the shrunk
 * failure's marble diagram, the replayed incident's healing. (spec/docs/snippets.spec.ts compiles
 * them.)
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = new URL('../../', import.meta.url).pathname;
const RUN_DIR = join(ROOT, 'spec', 'docs', '__chaos_run__');

interface Program {
  readonly where: string;
  readonly code: string;
  /** What it must print (the ```text block after it). */
  readonly output: string;
}

/** Each ```ts block followed (blank lines apart) by a ```text block, in `markdown` (only under the heading `section`, when given, up to the next heading of its level). */
export function programs(page: string, markdown: string, section?: string): Program[] {
  let lines = markdown.split('\n');
  let offset = 0;
  if (section !== undefined) {
    const start = lines.findIndex((l) => l === section);
    if (start === -1) throw new Error(`${page}: no heading ${JSON.stringify(section)}`);
    const level = /^#+/.exec(section)![0];
    const end = lines.findIndex((l, i) => i > start && new RegExp(`^#{1,${level.length}} `).test(l));
    lines = lines.slice(start, end === -1 ? undefined : end);
    offset = start;
  }
  const blocks: { lang: string; line: number; body: string }[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(\w+)\s*$/.exec(lines[i]!);
    if (!fence) continue;
    const line = offset + i + 1;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i]!);
    blocks.push({ lang: fence[1]!, line, body: body.join('\n') });
  }
  const out: Program[] = [];
  blocks.forEach((b, i) => {
    const next = blocks[i + 1];
    if (b.lang === 'ts' && next?.lang === 'text') out.push({ where: `${page}:${b.line}`, code: b.body, output: next.body });
  });
  return out;
}

const run = (file: string): Promise<{ code: number; out: string; err: string }> =>
  new Promise((done) =>
    execFile(process.execPath, ['--import', 'tsx', file], { cwd: ROOT, timeout: 60_000 }, (error, stdout, stderr) =>
      done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, out: stdout, err: stderr }),
    ),
  );

describe('the chaos docs: each program prints what the page says it prints', function () {
  this.timeout(120_000);
  const found = [
    ...programs('marble-docs/chaos.md', readFileSync(join(ROOT, 'marble-docs', 'chaos.md'), 'utf8')),
    ...programs('docs/guides/proving-healing.md', readFileSync(join(ROOT, 'docs', 'guides', 'proving-healing.md'), 'utf8')),
  ];

  before(() => {
    expect(existsSync(join(ROOT, 'dist', 'chaos', 'index.js')), 'dist/ is built (npm test builds first; else npm run build)').to.equal(true);
    mkdirSync(RUN_DIR, { recursive: true });
  });
  after(() => rmSync(RUN_DIR, { recursive: true, force: true }));

  it("finds the shrunk failure and the replayed incident in chaos.md, and the guide's two programs (healing, crashes)", () => {
    expect(found.filter((p) => p.where.startsWith('marble-docs/chaos.md')).length).to.equal(2);
    expect(found.filter((p) => p.where.startsWith('docs/guides/proving-healing.md')).length).to.equal(2);
  });

  found.forEach((program, i) => {
    it(`${program.where} prints the block after it`, async () => {
      const file = join(RUN_DIR, `program-${i}.ts`);
      writeFileSync(file, program.code);
      const { code, out, err } = await run(file);
      expect(err, `${program.where}: stderr`).to.equal('');
      expect(code, program.where).to.equal(0);
      expect(out.trimEnd()).to.equal(program.output.trimEnd());
    });
  });
});
