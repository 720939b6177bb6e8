/**
 * The guide "Inside a durable engine" (docs/guides/durable-engines.md): its two programs, as a user
 * would paste them, compile (strict, imports included) against the real SDKs (spec/support/majors:
 * `@dbos-inc/dbos-sdk`, `@restatedev/restate-sdk`) and the built rxheal, and run — their two base
 * URLs pointed at two local providers (the primary answers 503 once, then cuts its stream mid-
 * answer), nothing else changed: the DBOS program against a Postgres of its own prints the weather
 * answer, and prints it again when run a second time without calling a model (DBOS answers the
 * workflow from its journal); the Restate program serves the handler, which a real Restate server
 * invokes. spec/docs/snippets.spec.ts leaves these blocks to this spec. Needs Node ≥ 22 (Restate's
 * SDK; the engines live in spec/support/majors): .ci/run runs it on Node 24.
 */
import { expect } from 'chai';
import { execFile, spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { startLocalProvider, type LocalProvider } from '../../src/server/index.js';
import { ENGINE_PACKAGES, importsEngine, WEATHER_ANSWER } from '../support/agentFrameworks.js';
import { majorsProject } from '../support/nextMajors.js';
import { postgresProgram, startPostgres, type PostgresServer } from '../support/postgresServer.js';
import { freePort, stopChild } from '../support/redisServer.js';
import { startRestate, type RestateServer } from '../support/restateServer.js';
import { requireProgram } from '../support/systemPackage.js';
import { linkedProject, tsBlocks, typeErrorsIn } from '../support/tsBlocks.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const PAGE = 'docs/guides/durable-engines.md';
const OPENAI_URL = "'https://api.openai.com/v1'";
const ANTHROPIC_URL = "'https://api.anthropic.com'";
const programs = tsBlocks(PAGE, readFileSync(join(ROOT, PAGE), 'utf8')).filter((s) => importsEngine(s.code));
const engineOf = (code: string): 'dbos' | 'restate' => (code.includes("from '@dbos-inc/dbos-sdk'") ? 'dbos' : 'restate');

describe('the guide "Inside a durable engine": its DBOS and Restate programs, compiled against the real SDKs and run against local providers', function () {
  this.timeout(120_000);

  it('has one program an engine, each pointing at the two providers its run replaces', () => {
    expect(programs.map((p) => engineOf(p.code))).to.deep.equal(['dbos', 'restate']);
    for (const p of programs) {
      expect(p.code.split(OPENAI_URL).length - 1, `${PAGE}:${p.line}: ${OPENAI_URL} once`).to.equal(1);
      expect(p.code.split(ANTHROPIC_URL).length - 1, `${PAGE}:${p.line}: ${ANTHROPIC_URL} once`).to.equal(1);
    }
  });

  let dir = '';
  let majors = '';
  let primary: LocalProvider | undefined;
  let backup: LocalProvider | undefined;
  before(async function () {
    const project = majorsProject('the engines’ programs (their SDKs live in spec/support/majors)', 'Node 24');
    if (!project.ok) {
      console.log(`\n  [skipped] ${this.test?.parent?.fullTitle()}: ${project.reason}\n`);
      return this.skip();
    }
    majors = join(project.dir, 'node_modules');
    dir = linkedProject('rxheal-engines-guide-', {
      rxheal: ROOT,
      ...Object.fromEntries(['rxjs', 'io-ts', 'fp-ts'].map((name) => [name, join(ROOT, 'node_modules', name)])),
      ...Object.fromEntries(ENGINE_PACKAGES.map((name) => [name, join(majors, name)])),
      '@types/node': join(ROOT, 'node_modules', '@types', 'node'),
    });
    for (const p of programs) writeFileSync(join(dir, `${engineOf(p.code)}.ts`), p.code);
    [primary, backup] = await Promise.all([startLocalProvider({ name: 'primary', tokenDelayMs: 0 }), startLocalProvider({ name: 'backup', tokenDelayMs: 0 })]);
  });
  after(async () => {
    await Promise.all([primary?.close(), backup?.close()]);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('both compile as they are (strict, imports included) against the SDKs and the built rxheal', () => {
    expect(typeErrorsIn(dir, ['dbos.ts', 'restate.ts'])).to.deep.equal([]);
  });

  /** A program transpiled, its base URLs the local providers', the primary faulty: a 503, then a stream cut mid-answer. */
  const program = (engine: 'dbos' | 'restate'): string => {
    const code = programs
      .find((p) => engineOf(p.code) === engine)!
      .code.replace(OPENAI_URL, `'${primary!.openAIBaseURL}'`)
      .replace(ANTHROPIC_URL, `'${backup!.anthropicBaseURL}'`);
    const js = ts.transpileModule(code, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
    const file = join(dir, `${engine}.mjs`);
    writeFileSync(file, js);
    primary!.faults.set([
      { kind: 'status', status: 503, times: 1 },
      { kind: 'reset', afterChunks: 3, times: 1 },
    ]);
    return file;
  };
  const requests = (): number => primary!.requests.length + backup!.requests.length;

  describe('DBOS', () => {
    let postgres: PostgresServer | undefined;
    before(async function () {
      postgres = await startPostgres(requireProgram(this, postgresProgram()), { fsync: false });
    });
    after(async () => {
      await postgres?.stop();
    });

    const run = (file: string): Promise<{ code: number | null; stdout: string; stderr: string }> =>
      new Promise((resolve) => {
        const env = { PATH: process.env['PATH'] ?? '', DBOS_SYSTEM_DATABASE_URL: postgres!.connectionString.replace(/\/postgres$/, '/weather_agent') };
        const child = execFile(process.execPath, [file], { cwd: dir, env, timeout: 60_000 }, (_error, stdout, stderr) =>
          resolve({ code: child.exitCode, stdout, stderr }),
        );
      });

    it(`runs: the workflow answers through the tool, healed inside its steps ("${WEATHER_ANSWER}"); run again, DBOS answers from its journal`, async () => {
      const file = program('dbos');
      const first = await run(file);
      expect(first.code, first.stderr).to.equal(0);
      expect(first.stdout.trim().split('\n')).to.include(WEATHER_ANSWER);
      const asked = requests();
      expect(asked, 'a 503, a cut stream, then the answers').to.be.at.least(3);
      const second = await run(file);
      expect(second.code, second.stderr).to.equal(0);
      expect(second.stdout.trim().split('\n')).to.include(WEATHER_ANSWER);
      expect(requests(), 'the second run called no model').to.equal(asked);
    });
  });

  describe('Restate', () => {
    let server: RestateServer | undefined;
    before(async () => {
      server = await startRestate(join(majors, '@restatedev', 'restate-server-linux-x64', 'bin', 'restate-server'));
    });
    after(async () => {
      await server?.stop();
    });

    it(`runs: the service serves, the Restate server invokes it, the answer comes through the tool, healed inside its steps ("${WEATHER_ANSWER}")`, async () => {
      const file = program('restate');
      const port = await freePort();
      const child = spawn(process.execPath, [file], {
        cwd: dir,
        env: { PATH: process.env['PATH'] ?? '', PORT: String(port) },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      try {
        for (let i = 0; ; i++) {
          try {
            await server!.register(`http://127.0.0.1:${port}`);
            break;
          } catch (error) {
            if (i > 100) throw new Error(`${String(error)}: ${stderr}`, { cause: error });
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        }
        const res = await fetch(`${server!.ingress}/weather/ask`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify("What's the weather in Paris?"),
        });
        expect(res.status, stderr).to.equal(200);
        expect(await res.json()).to.equal(WEATHER_ANSWER);
      } finally {
        await stopChild(child, 'SIGTERM');
      }
    });
  });
});
