/**
 * "Download this run as a test" (examples/demo/runAsTest.ts): the demo's own agent answers over
 * HTTP (the two local providers on 127.0.0.1, the tools from its MCP server) with the page's
 * faults; each answer's spec replays it in virtual time against the demo's pipeline over stand-ins
 * (examples/demo/replay.ts) and heals the same way — checked in process, then the downloaded files
 * are written into the project and run by a mocha of their own, as a user's `npm test` would.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Observable } from 'rxjs';
import type { AgentEvent, Message } from '../../src/index.js';
import { replayIncident } from '../../src/chaos/index.js';
import { incidentSpec } from '../../src/chaos/report.js';
import { startLocalProvider, type Fault, type LocalProvider } from '../../src/server/index.js';
import { createDemoAgent, type DemoAgent } from '../../examples/demo/agent.js';
import { serveDemoMcp } from '../../examples/demo/mcpTools.js';
import { demoReplayAgent, type DemoReplay } from '../../examples/demo/replay.js';
import { runAsTest, type RunAsTest } from '../../examples/demo/runAsTest.js';
import { runSpecFiles } from '../support/runSpecFiles.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('the demo: “Download this run as a test”', function () {
  this.timeout(60_000);
  let primary: LocalProvider;
  let secondary: LocalProvider;
  let tools: Awaited<ReturnType<typeof serveDemoMcp>>;
  let agent: DemoAgent;
  const history: Message[] = [];
  /** Where the downloads are saved: a folder beside spec/ in the project, as a user would put them (its imports are relative to it). */
  let downloads: string;
  const saved: { file: string; title: string }[] = [];

  before(async () => {
    [primary, secondary] = await Promise.all([
      startLocalProvider({ name: 'primary', tokenDelayMs: 5 }),
      startLocalProvider({ name: 'secondary', tokenDelayMs: 5 }),
    ]);
    tools = await serveDemoMcp();
    agent = createDemoAgent(
      [
        { id: 'primary', label: 'primary', protocol: 'openai', baseURL: primary.openAIBaseURL, model: 'local', admin: primary.url },
        { id: 'secondary', label: 'secondary', protocol: 'anthropic', baseURL: secondary.anthropicBaseURL, model: 'local', admin: secondary.url },
      ],
      tools,
    );
    downloads = mkdtempSync(join(ROOT, '.run-as-test-'));
  });

  after(async () => {
    await Promise.all([primary?.close(), secondary?.close(), tools?.close()]);
    if (downloads) rmSync(downloads, { recursive: true, force: true });
  });

  /** One question as the page asks it (faults on the providers first): the answer's download, and how it was asked. */
  const answer = async (
    question: string,
    faults: readonly (Fault | undefined)[] = [],
  ): Promise<{ download: RunAsTest; asked: DemoReplay; events: AgentEvent[] }> => {
    [primary, secondary].forEach((p, i) => p.faults.set(faults[i] ? [faults[i]] : []));
    history.push({ role: 'user', content: question });
    const asked: DemoReplay = {
      history: [...history],
      midStream: agent.midStream,
      open: agent.breakers.names().filter((n) => agent.breakers.get(n).state !== 'closed'),
      providers: ['primary', 'secondary'],
    };
    const events: AgentEvent[] = [];
    await new Promise<void>((resolve) =>
      new Observable<AgentEvent>((subscriber) => agent.ask(history).subscribe(subscriber)).subscribe({
        next: (e) => events.push(e),
        error: () => resolve(),
        complete: () => resolve(),
      }),
    );
    for (const e of events) if (e.type === 'message') history.push(e.message);
    const download = runAsTest(events, asked, saved.length + 1);
    const file = join(downloads, download.filename);
    writeFileSync(file, download.source);
    saved.push({ file, title: /it\(("(?:[^"\\]|\\.)*")/.exec(download.source)![1]! });
    return { download, asked, events };
  };

  /** The download replays the answer: the same healing steps, no invariant broken. */
  const replaysTheSame = async ({ download, asked }: { download: RunAsTest; asked: DemoReplay }): Promise<string[]> => {
    const replay = await replayIncident(download.incident, demoReplayAgent(asked));
    expect(replay.run.violations).to.deep.equal([]);
    expect(replay.healing).to.deep.equal(download.incident.healing);
    expect(replay.same).to.equal(true);
    return replay.healing as string[];
  };

  it('a 429 with retry-after 1 s: the download replays the retry after the same wait, in virtual time', async () => {
    const run = await answer("What's the weather in Paris?", [{ kind: 'status', status: 429, retryAfter: 1, times: 1 }]);
    expect(run.download.incident.schedule.models?.['primary']?.[0]).to.deep.equal({ kind: 'status', status: 429, retryAfterMs: 1000 });
    expect(await replaysTheSame(run)).to.deep.equal(['retry model:primary #1 after 1000 ms']);
    expect(run.download.filename).to.equal('demo-run-1.spec.ts');
    expect(run.download.source).to.contain("import { demoReplayAgent } from '../examples/demo/replay.js';");
    expect(run.download.source).to.contain('"history": [{"role":"user","content":"What\'s the weather in Paris?"}],');
  });

  it('bad tool arguments (the provider asks for kelvin): recorded as the model call’s bad-tool-args, replayed as the same reflection', async () => {
    const run = await answer("What's the weather in Oslo?", [{ kind: 'bad-tool-args', times: 1 }]);
    expect(run.download.incident.schedule.models?.['primary']?.[0]).to.deep.equal({ kind: 'bad-tool-args' });
    // the refused call never ran: it is no execution of the tool
    expect(run.download.incident.schedule.tools?.['get_weather']).to.deep.equal([{ kind: 'ok' }]);
    expect(await replaysTheSame(run)).to.deep.equal(['reflection get_weather #1']);
  });

  it('the primary off: its retries, its breaker opening, the fallback; the next question skips it (open when asked, open in the replay)', async () => {
    const first = await answer('And the weather in Rome?', [{ kind: 'down' }]);
    expect(await replaysTheSame(first)).to.deep.equal([
      'retry model:primary #1 after 400 ms',
      'retry model:primary #2 after 800 ms',
      'circuit model:primary closed > open',
      'fallback model:primary > model:secondary',
      'circuit model:primary rejected',
      'fallback model:primary > model:secondary',
    ]);
    const next = await answer("What's the weather in Lisbon?", [{ kind: 'down' }]);
    expect(next.asked.open).to.deep.equal(['model:primary']);
    expect((await replaysTheSame(next))[0]).to.equal('circuit model:primary rejected');
  });

  it('the slow knowledge search: degraded after 3 s, replayed as a stalled call degraded at the same deadline', async () => {
    agent.slowSearch = true;
    try {
      const run = await answer('What is the refund policy?');
      expect(run.download.incident.schedule.tools?.['knowledge_search']).to.deep.equal([{ kind: 'stall' }]);
      expect(await replaysTheSame(run)).to.include('degraded knowledge_search');
    } finally {
      agent.slowSearch = false;
    }
  });

  it('a slow first token: the hedge, its win and the slow request cancelled, replayed the same', async () => {
    agent.breakers.get('model:primary').reset();
    const run = await answer('Tell me about hedged requests', [{ kind: 'slow-first-byte', delayMs: 3000, times: 1 }]);
    expect(await replaysTheSame(run)).to.deep.equal(['hedge model:primary started #1', 'hedge model:primary won #1', 'hedge model:primary cancelled #0']);
  });

  it("the primary dies mid-answer ('restart'): the fallback and the partial answer reset, replayed at the same event", async () => {
    const run = await answer('Tell me a story about a river', [{ kind: 'reset', afterChunks: 4, times: 1 }]);
    expect(run.download.incident.schedule.models?.['primary']).to.deep.equal([{ kind: 'reset', afterEvents: 4 }]);
    expect(await replaysTheSame(run)).to.deep.equal([
      'circuit model:primary closed > open',
      'fallback model:primary > model:secondary',
      'reset fallback model:secondary',
    ]);
  });

  it('the downloads, saved in the project, pass as written in a mocha of their own; one whose healing differs fails, naming the step', async () => {
    expect(saved).to.have.length(7);
    // a tampered copy: the incident says a second retry happened
    const tampered = join(downloads, 'tampered.spec.ts');
    const first = runAsTest([], { history: [{ role: 'user', content: 'Hi' }], midStream: 'restart' }, 0);
    writeFileSync(
      tampered,
      incidentSpec(
        { ...first.incident, healing: ['retry model:primary #1 after 400 ms'] },
        {
          from: '../examples/demo/replay.js',
          chaos: '../src/chaos/index.js',
          agent: 'demoReplayAgent',
          agentArgs: [{ history: [{ role: 'user', content: 'Hi' }], midStream: 'restart' }],
          title: 'tampered',
        },
      ),
    );
    const run = await runSpecFiles([...saved.map((s) => s.file), tampered]);
    expect(run.passed).to.deep.equal(saved.map((s) => JSON.parse(s.title) as string));
    expect(run.failed.map((f) => f.title)).to.deep.equal(['tampered']);
    expect(run.failed[0]!.message).to.contain('Expected values to be strictly deep-equal');
  });
});
