/**
 * The shipped examples (package.json `files`: examples/*.ts) as a user gets them: each imports
 * rxheal by its name ('rxheal', 'rxheal/testing'…, resolved through the exports map — Node's
 * self-reference here, node_modules in a copy), never the repository's src/, so a copy runs as
 * is (spec/package/pack.spec.ts typechecks copies in a fresh project). And `npm run example` as a
 * new user runs it: a child process (npm, then tsx) that must print every part — the retries,
 * the breaker opening, failing fast, going half-open, the probe closing it, then the whole agent
 * run and its summary — and exit 0 after its last line.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, importsOf, npmEnv, shippedExamples } from '../package/npmPack.js';

/** Runs `npm run <script>` in the repository: exit code and printed lines (time stamps dropped, trimmed). */
function npmRun(script: string, timeout = 60_000): Promise<{ code: number | null; lines: string[]; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile('npm', ['run', '--silent', script], { cwd: ROOT, env: npmEnv(), timeout }, (_error, stdout, stderr) =>
      resolve({
        code: child.exitCode,
        lines: stdout
          .split('\n')
          .map((l) => l.replace(/^\s*\d+ ms {2}/, '').trim())
          .filter((l) => l !== ''),
        stderr,
      }),
    );
  });
}

describe('the shipped examples', () => {
  it('import rxheal by its name (its exports map), and nothing of the repository but each other', () => {
    const files = shippedExamples();
    expect(files.length).to.be.at.least(4);
    const wrong: string[] = [];
    for (const file of files) {
      const specifiers = importsOf(readFileSync(join(ROOT, file), 'utf8'));
      expect(
        specifiers.some((s) => s === 'rxheal' || s.startsWith('rxheal/')),
        `${file} imports rxheal`,
      ).to.equal(true);
      for (const s of specifiers) if (s.startsWith('.') && !/^\.\/[\w-]+\.js$/.test(s)) wrong.push(`${file}: '${s}'`);
      // a sibling it imports is shipped too
      for (const s of specifiers) if (/^\.\/[\w-]+\.js$/.test(s)) expect(files, `${file} imports ${s}`).to.include(`examples/${s.slice(2, -3)}.ts`);
    }
    expect(wrong, 'relative imports out of examples/ (a copy would not find them)').to.deep.equal([]);
  });
});

describe('npm run example (examples/basic.ts, then examples/agent.ts)', function () {
  this.timeout(90_000);
  let run: Awaited<ReturnType<typeof npmRun>>;

  before(async () => {
    run = await npmRun('example');
  });

  it('exits 0, with nothing on stderr', () => {
    expect(run.stderr).to.equal('');
    expect(run.code).to.equal(0);
  });

  it('retryWithBackoff: two 503s and a 429 waited out, then the answer', () => {
    expect(run.lines).to.include('retry 1/3 in 100 ms after service_unavailable');
    expect(run.lines).to.include('retry 3/3 in 600 ms after rate_limit');
    expect(run.lines).to.include('answer: {"city":"Paris","temperature":22,"condition":"sunny"}');
  });

  it('circuitBreak: opens after 3 failures, fails fast, goes half-open after its reset timeout, and one probe closes it', () => {
    const circuit = run.lines.filter((l) => l.startsWith('circuit tool:broken_api'));
    expect(circuit).to.deep.equal([
      'circuit tool:broken_api: closed → open (failure_threshold, 3 failures)',
      'circuit tool:broken_api: open → half-open (reset_timeout)',
      'circuit tool:broken_api: half-open → closed (probe_success)',
    ]);
    expect(run.lines.filter((l) => / → failed: CircuitOpenError \(circuit_open\)$/.test(l))).to.have.length(3);
    expect(run.lines).to.include('probe → ok: ok');
    expect(run.lines).to.include('breaker state now: closed');
  });

  it('runAgent: the whole agent run heals itself — reflection, degradation, the mid-stream restart — and prints its summary last', () => {
    const agent = run.lines.slice(run.lines.findIndex((l) => l.startsWith('— runAgent')));
    expect(agent.length, 'the agent part ran').to.be.greaterThan(5);
    expect(agent.some((l) => l.startsWith('reflect   get_weather 1/3:'))).to.equal(true);
    expect(agent).to.include('degraded  knowledge_search: no result within 800 ms');
    expect(agent).to.include('reset     (fallback: discard the partial answer)');
    expect(agent).to.include('answer    "It is 22 °C and sunny in NYC."');
    expect(agent).to.include('resilience summary');
    expect(run.lines.at(-1)).to.match(/^degraded {2}knowledge_search: 1×, \d+ ms \(still\)$/);
  });
});
