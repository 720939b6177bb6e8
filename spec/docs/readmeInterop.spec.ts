/**
 * The frameworks guide's interop sections (docs/guides/frameworks.md, "## With …": the Vercel AI SDK, the official OpenAI and
 * Anthropic SDKs, LangChain.js): every ```ts snippet, before and after, is complete — imports
 * included — and compiles against the real framework packages and the built rxheal subpaths.
 */
import { expect } from 'chai';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { fromAiSdk } from '../../src/ai-sdk/index.js';
import { InvalidOptionError } from '../../src/core/errors/errors.js';
import { fallbackModel } from '../../src/sources/fallbackModel.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SECTIONS = ['rxheal/ai-sdk', 'rxheal/openai', 'rxheal/anthropic', 'rxheal/langchain'];

/** The ```ts blocks of each section of the frameworks guide whose heading names one of the subpaths. */
function snippets(): { section: string; code: string }[] {
  const readme = readFileSync(join(ROOT, 'docs', 'guides', 'frameworks.md'), 'utf8');
  const out: { section: string; code: string }[] = [];
  for (const part of readme.split(/^## /m)) {
    const heading = part.slice(0, part.indexOf('\n'));
    const subpath = SECTIONS.find((s) => heading.includes(`\`${s}\``));
    if (subpath === undefined) continue;
    for (const m of part.matchAll(/^```ts\n([\s\S]*?)^```$/gm)) out.push({ section: subpath, code: m[1]! });
  }
  return out;
}

describe('the frameworks guide: the interop sections', function () {
  this.timeout(60_000);

  it('has a section per framework, each with a before and an after of at most ten lines (then, at most, one more snippet of that subpath)', () => {
    const all = snippets();
    for (const subpath of SECTIONS) {
      const mine = all.filter((s) => s.section === subpath);
      expect(mine.length, subpath).to.be.oneOf([2, 3]);
      for (const { code } of mine.slice(0, 2)) expect(code.trimEnd().split('\n').length, `${subpath}:\n${code}`).to.be.at.most(10);
      for (const { code } of mine.slice(1)) expect(code, subpath).to.contain(`from '${subpath}'`);
    }
  });

  it('the AI SDK section shows fromAiSdk(model, { id }), which two models sharing a provider name and model id need: fallbackModel refuses their default ids', () => {
    const ai = snippets().filter((s) => s.section === 'rxheal/ai-sdk');
    expect(
      ai.some((s) => /fromAiSdk\([^()]*(\([^()]*\))?[^()]*, \{ id: '/.test(s.code)),
      'a snippet passes { id }',
    ).to.equal(true);
    const gateway = (baseURL: string) => createOpenAICompatible({ name: 'gateway', baseURL })('gpt-4o');
    const [east, west] = [gateway('https://east.example.com/v1'), gateway('https://west.example.com/v1')];
    expect(fromAiSdk(east).id).to.equal(fromAiSdk(west).id);
    expect(() => fallbackModel([fromAiSdk(east), fromAiSdk(west)])).to.throw(InvalidOptionError, /models\[1\]\.id/);
    expect(fallbackModel([fromAiSdk(east, { id: 'east' }), fromAiSdk(west, { id: 'west' })]).id).to.be.a('string');
  });

  it('every snippet compiles as it is (imports included) against the frameworks and the built subpaths', () => {
    // under node_modules/.cache: inside the package, so `rxheal/…` resolves through its own exports map
    const dir = join(ROOT, 'node_modules/.cache/rxheal-readme');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    try {
      const files = snippets().map(({ section, code }, i) => {
        const file = join(dir, `${section.replace('rxheal/', '')}-${i}.ts`);
        writeFileSync(file, code);
        return file;
      });
      const program = ts.createProgram(files, {
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
        types: ['node'],
        strict: true,
        noEmit: true,
        skipLibCheck: true,
      });
      const problems = ts
        .getPreEmitDiagnostics(program)
        .map((d) => `${d.file?.fileName.slice(dir.length + 1) ?? ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
      expect(problems).to.deep.equal([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
