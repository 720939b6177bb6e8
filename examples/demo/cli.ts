/**
 * `npm run demo:cli`: the demo's scenario in the terminal, as a timeline of events — the same
 * agent and local providers as the chat page, with faults set from here.
 */
import type { AgentEvent, Message } from '../../src/index.js';
import { startLocalProvider, type Fault, type LocalProvider } from '../../src/server/index.js';
import { createDemoAgent, type DemoAgent } from './agent.js';
import { serveDemoMcp } from './mcpTools.js';

const start = Date.now();
const stamp = (): string => `${String(Date.now() - start).padStart(6)} ms`;

/** Whether the cursor is at the end of an answer line (text is streaming). */
let answering = false;
/** Whether the next answer text continues one cut short (a fallback continuing it). */
let continuing = false;

/** One timeline line; an answer being streamed is ended first, and resumed on its own line later. */
function line(text: string): void {
  if (answering) process.stdout.write('\n');
  answering = false;
  console.log(`${stamp()}  ${text}`);
}

function print(e: AgentEvent): void {
  switch (e.type) {
    case 'text-delta':
      if (!answering) process.stdout.write(`${stamp()}  answer    ${continuing ? '…' : ''}`);
      answering = true;
      continuing = false;
      return void process.stdout.write(e.text);
    case 'reset':
      continuing = false;
      return line(`reset     discard the partial answer (${e.reason} → ${e.target})`);
    case 'retry':
      return line(`retry     ${e.target} ${e.attempt}/${e.max} in ${e.delayMs} ms (${e.category})`);
    case 'retry-succeeded':
      return line(`healed    ${e.target} on attempt ${e.attempt}`);
    case 'circuit':
      return line(`circuit   ${e.breaker} ${e.kind === 'transition' ? `${e.from} → ${e.to} (${e.reason})` : 'rejected a call (open)'}`);
    case 'fallback':
      // mid-answer, the fallback continues the text shown (or a reset comes first to discard it)
      if (e.midStream) continuing = true;
      return line(`fallback  ${e.from} → ${e.to} (${e.reason}${e.midStream ? ', mid-answer' : ''})`);
    case 'resume':
      // the text shown stays: the stream goes on from the event after the last one received
      return line(`resume    ${e.target} ${e.attempt}/${e.max}: ${e.reason}, after event ${e.startingAfter} of ${e.responseId}`);
    case 'tool-call':
      return line(`tool      ${e.name}(${JSON.stringify(e.args)})`);
    case 'tool-error':
      return line(`failed    ${e.name}: ${e.error}`);
    case 'reflection':
      return line(`reflect   ${e.prompt}`);
    case 'tool-result':
      return line(`result    ${JSON.stringify(e.result)}`);
    case 'degraded':
      return line(`degraded  ${e.capability}: ${e.reason}`);
    case 'hedge':
      return line(`hedge     ${e.target} attempt ${e.attempt} ${e.kind}${e.afterMs === undefined ? '' : ` after ${e.afterMs} ms`}`);
    case 'restored':
      return line(`restored  ${e.capability}`);
    case 'budget-exceeded':
      return e.resource === 'usd'
        ? line(`budget    $${e.used.toFixed(4)} would pass the question's $${e.limit.toFixed(2)}: ${e.cut ? 'the answer cut here (kept)' : 'the call refused'}`)
        : line(`budget    ${e.resource}: ${e.used} past ${e.limit}`);
    case 'spend':
      return e.estimated ? line(`spend     ${e.model} $${e.usd.toFixed(4)} (estimated), the question's total $${e.totalUsd.toFixed(4)}`) : undefined;
    case 'finish':
      if (answering) process.stdout.write('\n');
      answering = false;
      return;
    default:
      return;
  }
}

async function ask(agent: DemoAgent, history: Message[], question: string): Promise<void> {
  console.log('');
  line(`user      ${question}`);
  history.push({ role: 'user', content: question });
  await new Promise<void>((resolve) =>
    agent.ask(history).subscribe({
      next: (e) => {
        if (e.type === 'message') history.push(e.message);
        print(e);
      },
      error: (error: unknown) => {
        line(`error     ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
        resolve();
      },
      complete: resolve,
    }),
  );
}

async function scene(title: string, providers: LocalProvider[], faults: (Fault | undefined)[], run: () => Promise<void>): Promise<void> {
  console.log(`\n── ${title} ${'─'.repeat(Math.max(0, 80 - title.length))}`);
  providers.forEach((p, i) => p.faults.set(faults[i] ? [faults[i]] : []));
  await run();
}

const [primary, secondary] = await Promise.all([
  startLocalProvider({ name: 'primary', tokenDelayMs: 10 }),
  startLocalProvider({ name: 'secondary', tokenDelayMs: 10 }),
]);
const providers = [primary, secondary];
const tools = await serveDemoMcp();
const agent = createDemoAgent(
  [
    { id: 'primary', label: 'primary', protocol: 'openai', baseURL: primary.openAIBaseURL, model: 'local', admin: primary.url },
    { id: 'secondary', label: 'secondary', protocol: 'anthropic', baseURL: secondary.anthropicBaseURL, model: 'local', admin: secondary.url },
  ],
  tools,
);
agent.hub.events$.subscribe((e) => (e.type === 'circuit' && e.kind === 'transition' && e.to === 'half-open' ? print({ ...e }) : undefined));
const history: Message[] = [];
try {
  await scene(
    'the primary answers 429 once (retry-after 1 s): retried after the wait',
    providers,
    [{ kind: 'status', status: 429, retryAfter: 1, times: 1 }],
    () => ask(agent, history, "What's the weather in Paris?"),
  );
  await scene('the model sends bad tool arguments: reflection, then corrected arguments', providers, [{ kind: 'bad-tool-args', times: 1 }], () =>
    ask(agent, history, "What's the weather in Oslo?"),
  );
  await scene('the primary is off: retries, its breaker opens, the secondary answers', providers, [{ kind: 'down' }], () =>
    ask(agent, history, 'And the weather in Rome?'),
  );
  await scene('the primary is still off: its open breaker is skipped without a call', providers, [{ kind: 'down' }], () =>
    ask(agent, history, "What's the weather in Lisbon?"),
  );
  agent.slowSearch = true;
  await scene('the knowledge search is slow: degraded after 3 s, the run goes on', providers, [], () => ask(agent, history, 'What is the refund policy?'));
  agent.slowSearch = false;
  agent.breakers.get('model:primary').reset();
  await scene(
    'the primary is slow to its first token (3 s), once: a hedge after 1.5 s answers, the slow request is aborted',
    providers,
    [{ kind: 'slow-first-byte', delayMs: 3000, times: 1 }],
    () => ask(agent, history, 'Tell me about hedged requests'),
  );
  await agent.mcpFault({ restart: true });
  await scene(
    'the MCP server of the tools restarted: stateless (MCP 2026-07-28), nothing to forget: the next call answered, nothing re-initialised',
    providers,
    [],
    () => ask(agent, history, "What's the weather in Madrid?"),
  );
  await agent.mcpFault({ down: true });
  await scene('the MCP server is down: its breaker opens, its tools unavailable, the model answers without them', providers, [], () =>
    ask(agent, history, "What's the weather in Berlin?"),
  );
  await agent.mcpFault({ down: false });
  await scene(
    "the primary talks too long (its answer said 20 times over): cut where the question's cent runs out, the partial answer kept",
    providers,
    [{ kind: 'verbose', repeat: 20, times: 1 }],
    () => ask(agent, history, 'Tell me about the sea'),
  );
  agent.midStream = 'continue';
  await scene(
    "the primary dies mid-answer ('continue'): the secondary continues, nothing repeated",
    providers,
    [{ kind: 'reset', afterChunks: 4, times: 1 }],
    () => ask(agent, history, 'Tell me something nice about rivers'),
  );
} finally {
  await Promise.all([...providers.map((p) => p.close()), tools.close()]);
}
