/**
 * modelPool over three real rxheal/server members (Chat Completions on loopback, each with its own
 * prompt cache): a conversation placed on one member warms its cache there, moves on a 429 storm
 * (cold on the member it lands on), and comes back once the storm is over and a probe succeeded —
 * with its cache hits.
 */
import { expect } from 'chai';
import { lastValueFrom, toArray } from 'rxjs';
import type { HealEvent, Message, PoolEvent, TurnEvent } from '../../src/core/events/events.js';
import { HealHub } from '../../src/core/hub/hub.js';
import { streamModel, type Model } from '../../src/core/model/model.js';
import { openAICompatibleModel } from '../../src/providers/openai.js';
import { openAIResponsesModel } from '../../src/providers/responses.js';
import { startLocalProvider, type LocalProvider } from '../../src/server/localProvider.js';
import { modelPool } from '../../src/sources/modelPool.js';

describe('modelPool over three rxheal/server members', function () {
  this.timeout(20_000);
  let servers: LocalProvider[] = [];
  let members: Model[] = [];

  beforeEach(async () => {
    servers = await Promise.all(['a', 'b', 'c'].map((name) => startLocalProvider({ name: `member-${name}`, tokenDelayMs: 0 })));
    members = servers.map((s, i) => openAICompatibleModel({ baseURL: s.openAIBaseURL, model: 'local', id: `local@${'abc'[i]}` }));
  });
  afterEach(async () => {
    await Promise.all(servers.map((s) => s.close()));
  });

  const system: Message = { role: 'system', content: 'You are a helpful weather assistant. Answer in one sentence. '.repeat(30) };
  /** One turn of the conversation: its events; the answer appended to `messages`. */
  async function turn(pool: Model, messages: Message[], question: string): Promise<TurnEvent[]> {
    messages.push({ role: 'user', content: question });
    const events = await lastValueFrom(streamModel(pool, { messages: [...messages], tools: [], promptCacheKey: 'conv-1' }).pipe(toArray()));
    const text = events.flatMap((e) => (e.type === 'text-delta' ? [e.text] : [])).join('');
    messages.push({ role: 'assistant', content: text });
    return events;
  }
  const cached = (events: TurnEvent[]): number => {
    const finish = events.at(-1);
    return finish?.type === 'finish' ? (finish.usage?.cachedInputTokens ?? 0) : -1;
  };
  const served = (s: LocalProvider): number => s.requests.filter((r) => r.path.endsWith('/chat/completions')).length;

  it('moves on a 429 storm (cold where it lands), comes back after it with cache hits, each step an event', async () => {
    const hub = new HealHub();
    const pool$: PoolEvent[] = [];
    hub.events$.subscribe((e: HealEvent) => e.type === 'pool' && pool$.push(e));
    // retry-after 1 s is longer than the pool will wait (maxWaitMs 0): it moves
    const pool = modelPool(members, { hub, maxWaitMs: 0 });
    const messages: Message[] = [system];
    const [a, b] = servers as [LocalProvider, LocalProvider, LocalProvider];

    const t1 = await turn(pool, messages, 'Weather in Paris?');
    const t2 = await turn(pool, messages, 'And in Lyon?');
    expect([served(a), served(b)]).to.deep.equal([2, 0]);
    expect(cached(t1)).to.equal(0);
    expect(cached(t2)).to.be.greaterThan(100);
    expect(a.requests.every((r) => (r.body as { prompt_cache_key?: string }).prompt_cache_key === 'conv-1')).to.equal(true);

    a.faults.add({ kind: 'status', status: 429, retryAfter: 1, id: 'storm' });
    const t3 = await turn(pool, messages, 'And in Nice?');
    const t4 = await turn(pool, messages, 'And in Lille?');
    expect([served(a), served(b)]).to.deep.equal([3, 2]);
    expect(cached(t3)).to.equal(0); // cold on b
    expect(cached(t4)).to.be.greaterThan(100); // warm on b now
    expect(pool$.map((e) => [e.kind, e.from, e.to, e.reason])).to.deep.equal([['move', 'model:local@a', 'model:local@b', 'rate_limit']]);

    a.faults.remove('storm');
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const t5 = await turn(pool, messages, 'And in Brest?');
    const t6 = await turn(pool, messages, 'And in Metz?');
    expect([served(a), served(b)]).to.deep.equal([5, 2]);
    // back on a: the prefix a cached before the storm is read again, and then all of it
    expect(cached(t5)).to.be.greaterThan(100);
    expect(cached(t6)).to.be.greaterThan(cached(t5));
    expect(pool$.map((e) => e.kind)).to.deep.equal(['move', 'return']);
    expect(pool$[1]).to.include({ from: 'model:local@b', to: 'model:local@a', key: 'conv-1' });
  });

  it('a member cut mid-answer: Chat Completions members restart on the next member (a reset, the conversation moved); Responses members with resume pick the stream up on the same one', async () => {
    const hub = new HealHub();
    const heard: HealEvent[] = [];
    hub.events$.subscribe((e) => heard.push(e));
    const [a, b] = servers as [LocalProvider, LocalProvider, LocalProvider];
    const chat = modelPool(members, { hub });
    a.faults.add({ kind: 'reset', afterChunks: 2, times: 1 });
    const restarted = await turn(chat, [system], 'Weather in Paris?');
    expect(restarted.filter((e) => e.type === 'reset')).to.deep.equal([{ type: 'reset', reason: 'fallback', target: 'model:local@b' }]);
    expect(restarted.at(-1)).to.have.property('type', 'finish');
    expect(heard.filter((e) => e.type === 'pool').map((e) => e.type === 'pool' && [e.kind, e.from, e.to])).to.deep.equal([
      ['move', 'model:local@a', 'model:local@b'],
    ]);
    expect([served(a), served(b)]).to.deep.equal([1, 1]);

    const responses = modelPool(
      servers.map((s, i) => openAIResponsesModel({ baseURL: s.openAIBaseURL, model: 'local', id: `resp@${'abc'[i]}`, resume: true })),
      { hub },
    );
    a.faults.add({ kind: 'reset', afterChunks: 4, times: 1 });
    const resumed = await lastValueFrom(
      streamModel(responses, { messages: [system, { role: 'user', content: 'Weather in Lyon?' }], tools: [], promptCacheKey: 'conv-2' }, { hub }).pipe(
        toArray(),
      ),
    );
    expect(resumed.filter((e) => e.type === 'reset')).to.deep.equal([]);
    expect(resumed.at(-1)).to.have.property('type', 'finish');
    expect(heard.filter((e) => e.type === 'resume')).to.have.length(1);
    expect(b.requests.filter((r) => r.path.endsWith('/responses'))).to.have.length(0);
  });

  it('waits out a short retry-after on its warm member instead of moving: the same member answers, with its cache', async () => {
    const hub = new HealHub();
    const pool$: PoolEvent[] = [];
    hub.events$.subscribe((e: HealEvent) => e.type === 'pool' && pool$.push(e));
    const pool = modelPool(members, { hub, maxWaitMs: 5_000 });
    const messages: Message[] = [system];
    const [a, b] = servers as [LocalProvider, LocalProvider, LocalProvider];
    await turn(pool, messages, 'Weather in Paris?');
    a.faults.add({ kind: 'status', status: 429, retryAfter: 1, times: 1 });
    const started = performance.now();
    const t2 = await turn(pool, messages, 'And in Lyon?');
    expect(performance.now() - started).to.be.greaterThan(900);
    expect([served(a), served(b)]).to.deep.equal([3, 0]);
    expect(cached(t2)).to.be.greaterThan(100);
    expect(pool$.map((e) => [e.kind, e.from, e.waitMs])).to.deep.equal([['wait', 'model:local@a', 1_000]]);
  });
});
