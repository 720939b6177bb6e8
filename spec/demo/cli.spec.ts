import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../examples/demo/cli.ts', import.meta.url));

/** The timeline's lines without their time stamps. */
function timeline(stdout: string): string[] {
  return stdout
    .split('\n')
    .map((l) => l.replace(/^\s*\d+ ms {2}/, ''))
    .filter((l) => l.trim() !== '');
}

describe('npm run demo:cli (the scenario in the terminal, two real local providers)', function () {
  this.timeout(60_000);
  let lines: string[] = [];

  before(async () => {
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, ['--import', 'tsx', CLI], { timeout: 50_000 }, (error, out, stderr) =>
        error || stderr !== '' ? reject(error ?? new Error(stderr)) : resolve(out),
      ),
    );
    lines = timeline(stdout);
  });

  // the money scene's answer: the scripted answer said 20 times over, cut where the question's cent ran out (checked below)
  let ANSWER_CUT = '';

  it('every question gets its answer on one line, and nothing errors', () => {
    ANSWER_CUT = lines.find((l) => l.startsWith('answer    I am the local rxheal assistant. You said: "Tell me about the sea"')) ?? '(no answer to the sea)';
    expect(lines.filter((l) => l.startsWith('error'))).to.deep.equal([]);
    expect(lines.filter((l) => l.startsWith('answer'))).to.deep.equal([
      'answer    It is 22 °C and sunny in Paris.',
      'answer    It is 22 °C and sunny in Oslo.',
      'answer    It is 22 °C and sunny in Rome.',
      'answer    It is 22 °C and sunny in Lisbon.',
      "answer    I couldn't search the knowledge base right now, so I can't look that up. Please try again later.",
      'answer    I am the local rxheal assistant. You said: "Tell me about hedged requests". Ask me about the weather in a city, or about the refund policy, and I will use a tool to answer.',
      'answer    It is 22 °C and sunny in Madrid.',
      "answer    Sorry, the get_weather tool is not working right now, so I can't answer that part.",
      ANSWER_CUT,
      'answer    I am the local',
      'answer    … rxheal assistant. You said: "Tell me something nice about rivers". Ask me about the weather in a city, or about the refund policy, and I will use a tool to answer.',
    ]);
  });

  it('runs to its last line (the continued answer) and exits 0', () => {
    expect(lines.at(-1)).to.match(/^answer {4}… rxheal assistant\. You said: "Tell me something nice about rivers"\./);
  });

  it('shows the healing: the retry after retry-after, the reflection, the breaker opening and being skipped, the degradation, the mid-answer fallback', () => {
    expect(lines).to.include('retry     model:primary 1/2 in 1000 ms (rate_limit)');
    expect(lines.some((l) => l.startsWith("reflect   The tool 'get_weather' failed"))).to.equal(true);
    expect(lines).to.include('circuit   model:primary closed → open (failure_threshold)');
    expect(lines).to.include('fallback  model:primary → model:secondary (circuit_open)');
    expect(lines).to.include('degraded  knowledge_search: no result within 3000 ms');
    expect(lines).to.include('fallback  model:primary → model:secondary (connection, mid-answer)');
  });

  it('hedges a slow first token: the hedge sent after 1.5 s wins, the slow request cancelled', () => {
    const hedges = lines.filter((l) => l.startsWith('hedge')).map((l) => l.replace(/after \d+ ms/, 'after N ms'));
    expect(hedges).to.deep.equal([
      'hedge     model:primary attempt 1 started after N ms',
      'hedge     model:primary attempt 1 won',
      'hedge     model:primary attempt 0 cancelled',
    ]);
  });

  it("counts money: the answer said 20 times over is cut where the question's cent runs out, kept, part of it shown", () => {
    const said =
      'I am the local rxheal assistant. You said: "Tell me about the sea". Ask me about the weather in a city, or about the refund policy, and I will use a tool to answer.';
    const answer = lines.find((l) => l.startsWith(`answer    ${said}`));
    expect(answer, 'the answer to the sea').to.not.equal(undefined);
    const shown = answer!.slice('answer    '.length);
    // more than one saying, not all 20: cut mid-stream
    expect(shown.length).to.be.greaterThan(2 * said.length);
    expect(shown.length).to.be.lessThan(19 * said.length);
    const after = lines.slice(lines.indexOf(answer!) + 1);
    expect(after[0]).to.match(/^budget {4}\$0\.01\d\d would pass the question's \$0\.01: the answer cut here \(kept\)$/);
    expect(after[1]).to.match(/^spend {5}primary \$0\.01\d\d \(estimated\)/);
  });

  it('the tools over MCP: a restarted server costs nothing (stateless: nothing to forget, the call answered); a server down opens its circuit and degrades its tools', () => {
    const madrid = lines.indexOf('answer    It is 22 °C and sunny in Madrid.');
    const before = lines.slice(lines.lastIndexOf("user      What's the weather in Madrid?"), madrid);
    expect(
      before.filter((l) => /^(circuit|retry|failed)/.test(l)),
      'no failure seen, no retry',
    ).to.deep.equal([]);
    expect(lines).to.include('circuit   mcp:tools closed → open (failure_threshold)');
    expect(lines).to.include("degraded  get_weather: MCP server 'tools' is unavailable (circuit open)");
    expect(lines).to.include("degraded  knowledge_search: MCP server 'tools' is unavailable (circuit open)");
  });
});
