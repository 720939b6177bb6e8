/**
 * examples/ai-sdk.ts and examples/langchain.ts run as a user runs them (`npm run example:ai-sdk`
 * runs `tsx examples/ai-sdk.ts` once dist/ is built), each against its own two local providers:
 * every answer whole, and the healing that made it so, to its last line.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const RIVERS =
  'I am the local rxheal assistant. You said: "Tell me something nice about rivers". Ask me about the weather in a city, or about the refund policy, and I will use a tool to answer.';

/** The example's printed lines, trimmed; it must exit 0 with nothing on stderr. */
function runExample(name: string): Promise<string[]> {
  const file = fileURLToPath(new URL(`../../examples/${name}`, import.meta.url));
  return new Promise((resolve, reject) =>
    execFile(process.execPath, ['--import', 'tsx', file], { timeout: 50_000 }, (error, stdout, stderr) =>
      error || stderr !== ''
        ? reject(new Error(`${name} failed (${error?.message ?? 'exit 0'}): ${stderr}`))
        : resolve(
            stdout
              .split('\n')
              .map((l) => l.trim())
              .filter((l) => l !== ''),
          ),
    ),
  );
}

const retryLine = /^retry {5}model:primary \d\/\d in \d+ ms \((\w+)\)$/;

describe('the interop examples (run with tsx against the local provider)', function () {
  this.timeout(60_000);

  before(() => {
    // they import rxheal by name: the built package (self-reference through the exports map)
    expect(
      existsSync(fileURLToPath(new URL('../../dist/ai-sdk/index.js', import.meta.url))),
      'dist/ is built (npm test builds first; else npm run build)',
    ).to.equal(true);
  });

  it('examples/ai-sdk.ts: streamText continues an answer cut mid-stream, waits out a 429, falls back past a dead primary and its open breaker', async () => {
    const lines = await runExample('ai-sdk.ts');
    expect(lines.filter((l) => l.startsWith('answer'))).to.deep.equal([
      `answer    ${RIVERS} [stop]`,
      'answer    It is 22 °C and sunny in Paris. [stop]',
      'answer    It is 22 °C and sunny in Oslo. [stop]',
      'answer    It is 22 °C and sunny in Rome. [stop]',
    ]);
    expect(lines).to.include('fallback  model:primary → model:backup (connection, mid-answer)');
    expect(lines).to.include('retry     model:primary 1/2 in 1000 ms (rate_limit)');
    expect(lines).to.include('circuit   model:primary closed → open');
    expect(lines).to.include('fallback  model:primary → model:backup (circuit_open)');
    expect(lines.filter((l) => retryLine.test(l)).map((l) => retryLine.exec(l)![1])).to.include('connection');
    expect(lines.at(-1), 'it runs to its last line').to.equal('answer    It is 22 °C and sunny in Rome. [stop]');
  });

  it('examples/langchain.ts: a chain continues an answer cut mid-stream; a tool loop retries and falls back past a 503', async () => {
    const lines = await runExample('langchain.ts');
    expect(lines.filter((l) => l.startsWith('answer'))).to.deep.equal([`answer    ${RIVERS}`, 'answer    It is 22 °C and sunny in Lisbon.']);
    expect(lines).to.include('fallback  model:primary → model:backup (connection, mid-answer)');
    expect(lines).to.include('tool      get_weather({"city":"Lisbon","units":"celsius"})');
    expect(lines).to.include('fallback  model:primary → model:backup (service_unavailable)');
    expect(lines.filter((l) => retryLine.test(l)).map((l) => retryLine.exec(l)![1])).to.include('service_unavailable');
    expect(lines.at(-1), 'it runs to its last line').to.equal('answer    It is 22 °C and sunny in Lisbon.');
  });
});
