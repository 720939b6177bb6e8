/**
 * The frameworks guide's "With the OpenAI Agents SDK and Mastra" snippets (docs/guides/frameworks.md), as a user would paste them: each
 * compiles (strict, imports included) against the real framework packages and the built rxheal —
 * with the `@ai-sdk/provider` its install line gets there (`@ai-sdk/provider@3`: the newest 3.x;
 * no version: the newest, 4.x), as npm resolves the line for a user — and runs — with its two base URLs pointed at two local providers (rxheal/server), nothing else
 * changed — printing the weather answer while the primary is down; Mastra's, with both down,
 * prints the error it found on `res.error`. spec/docs/snippets.spec.ts leaves these two blocks to
 * this spec: the frameworks need Node ≥ 22, so they live in spec/support/majors, and this spec
 * runs where they install (`.ci/run`'s Node 22 and 24 runs; on Node 20 it reports itself skipped).
 *
 * The consumer project is a temporary folder whose node_modules are links: `rxheal` to this
 * repository (its exports map, the built dist/), the frameworks and zod to spec/support/majors,
 * `@types/node` to the project's own; `@ai-sdk/provider`, which rxheal's declarations import,
 * is mapped (`paths`) to the copy the line gets: the project's own (3.x) or spec/support/majors'
 * 4.x. spec/package/install.spec.ts compiles them too, in projects npm installed from the lines.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import semver from 'semver';
import { agentFrameworks, FRAMEWORK_PACKAGES, frameworkOf, frameworkSnippets, WEATHER_ANSWER, type FrameworkName } from '../support/agentFrameworks.js';
import { localProviders } from '../support/interop.js';
import { frameworkLines, ROOT } from '../package/npmPack.js';
import { linkedProject, typeErrorsIn } from '../support/tsBlocks.js';

const MAJORS = join(ROOT, 'spec', 'support', 'majors', 'node_modules');

/** The copies of `@ai-sdk/provider` the specs have, newest first: spec/support/majors' 4.x, the project's 3.x. */
const PROVIDERS = [join(MAJORS, '@ai-sdk', 'provider-4'), join(ROOT, 'node_modules', '@ai-sdk', 'provider')];

/**
 * The `@ai-sdk/provider` a framework's README install line gets, as npm picks it: the newest copy
 * inside the range the line names (`@ai-sdk/provider@3`), or the newest of all (no range).
 */
function providerOfLine(framework: FrameworkName): { range: string; dir: string; version: string } {
  const line = frameworkLines().find((l) => frameworkOf(l.command) === framework);
  expect(line, `the frameworks guide's agent-framework table has a ${framework} line`).to.not.equal(undefined);
  const word = line!.command.split(/\s+/).find((w) => w === '@ai-sdk/provider' || w.startsWith('@ai-sdk/provider@'));
  expect(word, `${line!.command}: names @ai-sdk/provider`).to.be.a('string');
  const range = word!.slice('@ai-sdk/provider@'.length) || '*';
  const copies = PROVIDERS.map((dir) => ({
    range,
    dir,
    version: (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version,
  }));
  const picked = copies.find((c) => semver.satisfies(c.version, range));
  expect(picked, `${line!.command}: a copy of @ai-sdk/provider inside ${range} (${copies.map((c) => c.version).join(', ')})`).to.not.equal(undefined);
  return picked!;
}

const OPENAI_URL = "'https://api.openai.com/v1'";
const ANTHROPIC_URL = "'https://api.anthropic.com'";

const loaded = await agentFrameworks();

describe("the frameworks guide: the agent frameworks' snippets (With the OpenAI Agents SDK and Mastra), compiled against the real packages and run against local providers", function () {
  this.timeout(60_000);
  const snippets = frameworkSnippets();

  it('the section has one snippet a framework, each pointing at the two providers its run replaces', () => {
    expect(snippets.map((s) => s.framework)).to.deep.equal(['agents', 'mastra']);
    for (const s of snippets) {
      expect(s.code.split(OPENAI_URL).length - 1, `docs/guides/frameworks.md:${s.line}: ${OPENAI_URL} once`).to.equal(1);
      expect(s.code.split(ANTHROPIC_URL).length - 1, `docs/guides/frameworks.md:${s.line}: ${ANTHROPIC_URL} once`).to.equal(1);
    }
  });

  if (!loaded.ok) {
    it('compile against the real packages and run against two local providers', function () {
      this.skip();
    });
    return;
  }

  const providers = localProviders();
  let dir = '';
  before(() => {
    dir = linkedProject('rxheal-agents-readme-', {
      rxheal: ROOT,
      ...Object.fromEntries([...FRAMEWORK_PACKAGES, 'zod'].map((name) => [name, join(MAJORS, name)])),
      '@types/node': join(ROOT, 'node_modules', '@types', 'node'),
    });
    for (const s of snippets) writeFileSync(join(dir, `${s.framework}.ts`), s.code);
  });
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  for (const framework of ['agents', 'mastra'] as const) {
    it(`the ${framework === 'agents' ? 'OpenAI Agents SDK' : 'Mastra'} snippet compiles as it is (strict, imports included) against the framework, the built rxheal and the @ai-sdk/provider its install line gets`, () => {
      const provider = providerOfLine(framework);
      const problems = typeErrorsIn(dir, [`${framework}.ts`], { paths: { '@ai-sdk/provider': [join(provider.dir, 'dist', 'index.d.ts')] } });
      expect(problems, `@ai-sdk/provider@${provider.range}: ${provider.version}`).to.deep.equal([]);
    });
  }

  /** Runs one snippet (transpiled, its base URLs the local providers') with this Node: exit code and output. */
  const runSnippet = (framework: 'agents' | 'mastra'): Promise<{ code: number | null; stdout: string; stderr: string }> => {
    const s = snippets.find((x) => x.framework === framework)!;
    const code = s.code.replace(OPENAI_URL, `'${providers.server.openAIBaseURL}'`).replace(ANTHROPIC_URL, `'${providers.backup.anthropicBaseURL}'`);
    const js = ts.transpileModule(code, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
    const file = join(dir, `${framework}.mjs`);
    writeFileSync(file, js);
    // the Agents SDK's tracing would export to OpenAI (a key, the network): off, as the SDK documents
    const env = { PATH: process.env['PATH'] ?? '', OPENAI_AGENTS_DISABLE_TRACING: '1' };
    return new Promise((resolve) => {
      const child = execFile(process.execPath, [file], { cwd: dir, env, timeout: 50_000 }, (_error, stdout, stderr) =>
        resolve({ code: child.exitCode, stdout, stderr }),
      );
    });
  };

  for (const framework of ['agents', 'mastra'] as const) {
    it(`the ${framework === 'agents' ? 'OpenAI Agents SDK' : 'Mastra'} snippet runs: the primary down, the backup answers through the tool, "${WEATHER_ANSWER}"`, async () => {
      providers.server.faults.set({ kind: 'down' });
      const before = providers.backup.requests.length;
      const { code, stdout, stderr } = await runSnippet(framework);
      expect({ code, stdout: stdout.trim() }, stderr).to.deep.equal({ code: 0, stdout: WEATHER_ANSWER });
      expect(providers.backup.requests.length - before, 'the backup answered both turns').to.equal(2);
    });
  }

  it('the Mastra snippet with both providers down: stream() resolves, no text, and the snippet prints the error it finds on res.error', async () => {
    providers.server.faults.set({ kind: 'down' });
    providers.backup.faults.set({ kind: 'down' });
    const { code, stdout, stderr } = await runSnippet('mastra');
    expect({ code, stdout: stdout.trim() }).to.deep.equal({ code: 0, stdout: '' });
    expect(stderr).to.match(/no answer: AllFallbacksFailedError: All 2 alternatives failed/);
  });
});
