/**
 * Long tools as MCP Tasks (the `io.modelcontextprotocol/tasks` extension of MCP 2026-07-28): a 2.x
 * client and the 2.x fixture server (tasks2.ts serves the extension) over Streamable HTTP on
 * 127.0.0.1 and over stdio. A call the server answers with a task handle is followed to its end as
 * the same call: polled at the server's `pollIntervalMs`, its question answered once with
 * `tasks/update`, each change a `task` event, `tasks/cancel` sent when it is left or its deadline
 * passes; a task checkpointed before is polled, not called again; a lost task of a tool not safe to
 * repeat is an unknown outcome.
 */
import { expect } from 'chai';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { lastValueFrom, of, throwError, type Observable } from 'rxjs';
import { classifyError, HealHub, ToolError, type HealEvent } from '../../src/index.js';
import {
  fromMcp,
  McpInputRequiredError,
  McpOutcomeUnknownError,
  McpProtocolError,
  McpTimeoutError,
  type FromMcpOptions,
  type McpInputRequest,
} from '../../src/mcp/index.js';
import { startHttpFixture2, type FixtureHttpServer2 } from './fixtures/httpServer2.js';
import { forgetTasks, taskLog } from './fixtures/tasks2.js';
import { stats } from './fixtures/tools2.js';
import { connected2, failure, run, serverStats, stdio2, toolNamed, until } from './support.js';

type Tools = Awaited<ReturnType<typeof fromMcp>>;

/** The hub's task events, described. */
function taskEvents(): { hub: HealHub; seen: string[]; events: HealEvent[] } {
  const events: HealEvent[] = [];
  const seen: string[] = [];
  const hub = new HealHub();
  hub.events$.subscribe((event) => {
    events.push(event);
    if (event.type === 'task') seen.push(`${event.kind}:${event.status}${event.message === undefined ? '' : `:${event.message}`}`);
  });
  return { events, seen, hub };
}

/** One execution of a tool with a context of the spec's own (a durable run's `resumed` and `checkpoint`). */
function execute(tools: Tools, name: string, args: Record<string, unknown>, context: Record<string, unknown> = {}): Promise<unknown> {
  const tool = toolNamed(tools, name);
  return lastValueFrom(tool.execute(args, { signal: new AbortController().signal, callId: 'c-1', ...context } as never) as Observable<unknown>);
}

describe('rxheal/mcp: long tools as MCP Tasks (2.x client and server, MCP 2026-07-28)', function () {
  this.timeout(20_000);
  let server: FixtureHttpServer2;
  const clients: Client[] = [];
  beforeEach(async () => {
    taskLog.length = 0;
    server = await startHttpFixture2();
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
    await server.stop();
    forgetTasks();
  });
  const connect = async (): Promise<Client> => {
    const client = new Client({ name: 'rxheal-spec', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(server.url));
    clients.push(client);
    return client;
  };
  const tools = async (options: FromMcpOptions = {}): Promise<Tools> => fromMcp(await connect(), { id: 'jobs', ...options });
  const gets = (): number[] => taskLog.filter((l) => l.method === 'tasks/get').map((l) => l.at);

  it('a task handle is followed to its result: the extension declared, tasks/get polled at the server’s pollIntervalMs, each change a task event', async () => {
    const { hub, seen } = taskEvents();
    const result = await run(await tools({ hub }), 'render', { pages: 3, pageMs: 120, pollMs: 100 });
    expect(result).to.equal('rendered 3 pages (approval not asked)');
    expect(server.methods).to.include({ 'tools/call': 1 });
    expect(server.methods['tasks/get'], 'polled until it completed').to.be.within(3, 8);
    const at = gets();
    for (let i = 1; i < at.length; i++) expect(at[i]! - at[i - 1]!, 'never sooner than the server asked').to.be.at.least(90);
    expect(seen[0]).to.equal('created:working:queued');
    expect(seen[seen.length - 1]).to.equal('status:completed:done');
    expect(seen.some((s) => s.startsWith('status:working:page'))).to.equal(true);
  });

  it('without a pollIntervalMs, the polls back off while the task does not change (initialMs, doubled, at most maxMs)', async () => {
    const result = await run(await tools({ tasks: { initialMs: 40, maxMs: 160 } }), 'render', { pages: 1, pageMs: 700 });
    expect(result).to.equal('rendered 1 pages (approval not asked)');
    const at = gets();
    const gaps = at.slice(1).map((t, i) => t - at[i]!);
    // 40, 80, 160, 160, … while the page renders: fewer polls than a fixed 40 ms would make
    expect(at.length, `polls at gaps ${gaps.join(', ')}`).to.be.within(4, 9);
    expect(Math.max(...gaps)).to.be.within(140, 400);
  });

  it('a task that asks: onInputRequired answers each question once (with the task’s id), sent with tasks/update, and the task goes on', async () => {
    const asked: McpInputRequest[] = [];
    const { hub, seen } = taskEvents();
    const onInputRequired = (request: McpInputRequest) => {
      asked.push(request);
      return { [Object.keys(request.inputRequests)[0]!]: { action: 'accept', content: { ok: true } } };
    };
    const result = await run(await tools({ hub, onInputRequired, tasks: { initialMs: 20, maxMs: 40 } }), 'render', { pages: 2, pageMs: 60, ask: true });
    expect(result).to.equal('rendered 2 pages (approval {"action":"accept","content":{"ok":true}})');
    expect(asked).to.have.length(1);
    expect(asked[0]).to.include({ server: 'jobs', tool: 'render', round: 1 });
    expect(asked[0]!.taskId).to.be.a('string');
    expect(Object.keys(asked[0]!.inputRequests)).to.deep.equal(['approve-1']);
    expect(taskLog.filter((l) => l.method === 'tasks/update')).to.have.length(1);
    expect(seen).to.include('status:input_required:waiting for approval after page 1');
  });

  it('a task that asks and nothing answers: McpInputRequiredError (not retried), and the task is cancelled on the server', async () => {
    const { hub, seen } = taskEvents();
    const error = (await failure(run(await tools({ hub, tasks: { initialMs: 20 } }), 'render', { pages: 2, pageMs: 40, ask: true }))) as ToolError;
    expect(error.cause).to.be.instanceOf(McpInputRequiredError);
    expect((error.cause as Error).message).to.match(/asks, and nothing answers it/);
    expect(classifyError(error.cause).retryable).to.equal(false);
    await until(() => stats.cancelled >= 1);
    expect(seen[seen.length - 1]).to.equal('cancel:input_required:waiting for approval after page 1');
  });

  it('a task that fails: its JSON-RPC error in rxheal’s words (-32603: a server error, retryable)', async () => {
    const error = (await failure(run(await tools({ tasks: { initialMs: 20 } }), 'render', { pages: 1, pageMs: 20, fail: true }))) as ToolError;
    expect(error.cause).to.be.instanceOf(McpProtocolError);
    expect((error.cause as Error).message).to.match(/task .* failed: renderer crashed/);
    expect(classifyError(error.cause).category).to.equal('server_error');
  });

  it('unsubscribed mid-task: tasks/cancel is sent and the server stops it', async () => {
    const { hub, seen } = taskEvents();
    const tool = toolNamed(await tools({ hub, tasks: { initialMs: 20 } }), 'render');
    const before = stats.cancelled;
    const sub = (tool.execute({ pages: 50, pageMs: 100 }, { signal: new AbortController().signal, callId: 'c-9' } as never) as Observable<unknown>).subscribe();
    await until(() => seen.length >= 1 && gets().length >= 1);
    sub.unsubscribe();
    await until(() => stats.cancelled === before + 1);
    expect(taskLog.filter((l) => l.method === 'tasks/cancel')).to.have.length(1);
    expect(seen[seen.length - 1]).to.match(/^cancel:working/);
  });

  it('maxTotalTimeoutMs bounds the task: McpTimeoutError (total), and the task is cancelled', async () => {
    const before = stats.cancelled;
    const error = (await failure(run(await tools({ maxTotalTimeoutMs: 400, tasks: { initialMs: 50 } }), 'render', { pages: 40, pageMs: 100 }))) as ToolError;
    expect(error.cause).to.be.instanceOf(McpTimeoutError);
    expect((error.cause as McpTimeoutError).message).to.match(/400/);
    await until(() => stats.cancelled === before + 1);
  });

  it('tasks: false declares nothing: the server renders while the call waits, and answers in full (no tasks/get)', async () => {
    expect(await run(await tools({ tasks: false }), 'render', { pages: 2, pageMs: 30 })).to.equal('rendered 2 pages (approval not asked)');
    expect(server.methods).to.not.have.property('tasks/get');
  });

  it('a poll that fails (the server restarted: its connections dropped, its tasks kept) is made again: the task completes', async () => {
    const tool$ = run(await tools({ tasks: { initialMs: 50, maxMs: 50 } }), 'render', { pages: 4, pageMs: 100 });
    await until(() => gets().length >= 1);
    await server.restart();
    expect(await tool$).to.equal('rendered 4 pages (approval not asked)');
    expect(server.methods).to.include({ 'tools/call': 1 });
  });

  describe('checkpoints (what a durable run hands a call: resumed, checkpoint)', () => {
    it('the task’s id is checkpointed before the first poll; a call resumed from it polls the same task, never calling again', async () => {
      const states: unknown[] = [];
      const checkpoint = (state: unknown): Observable<void> => {
        states.push(state);
        return of(undefined);
      };
      const { hub, seen } = taskEvents();
      const all = await tools({ hub, tasks: { initialMs: 30 } });
      expect(await execute(all, 'render', { pages: 2, pageMs: 60 }, { checkpoint })).to.equal('rendered 2 pages (approval not asked)');
      expect(states).to.have.length(1);
      const state = states[0] as { mcpTask: { server: string; tool: string; taskId: string } };
      expect(state.mcpTask).to.include({ server: 'jobs', tool: 'render' });
      expect(taskLog[0]!.taskId).to.equal(state.mcpTask.taskId);
      // a second process would hand this back: the same task, polled (it is over: its result at once)
      const resumed = await execute(all, 'render', { pages: 2, pageMs: 60 }, { resumed: state });
      expect(resumed).to.equal('rendered 2 pages (approval not asked)');
      expect(server.methods).to.include({ 'tools/call': 1 });
      expect(seen.filter((s) => s.startsWith('resumed:'))).to.deep.equal(['resumed:completed:done']);
    });

    it('a checkpoint that cannot be written fails the call and cancels the task (a resume would not know it)', async () => {
      const before = stats.cancelled;
      const checkpoint = (): Observable<void> => throwError(() => new Error('journal down'));
      const error = await failure(execute(await tools({ tasks: { initialMs: 30 } }), 'render', { pages: 20, pageMs: 100 }, { checkpoint }));
      expect((error as Error).message).to.equal('journal down');
      await until(() => stats.cancelled === before + 1);
    });

    it('a checkpointed task the server no longer knows: McpOutcomeUnknownError for a tool not safe to repeat (not called again)', async () => {
      const all = await tools({ tasks: { initialMs: 30 } });
      const resumed = { mcpTask: { server: 'jobs', tool: 'render', taskId: 'f0e1d2c3-gone' } };
      const error = await failure(execute(all, 'render', { pages: 1, pageMs: 10 }, { resumed }));
      expect(error).to.be.instanceOf(McpOutcomeUnknownError);
      expect((error as Error).message).to.match(/task f0e1d2c3-gone is gone from the server/);
      expect(server.methods).to.not.have.property('tools/call');
    });

    it('a checkpoint of another server or tool is not this call’s: it calls', async () => {
      const all = await tools({ tasks: { initialMs: 30 } });
      const resumed = { mcpTask: { server: 'other', tool: 'render', taskId: 'x' } };
      expect(await execute(all, 'render', { pages: 1, pageMs: 10 }, { resumed })).to.equal('rendered 1 pages (approval not asked)');
      expect(server.methods).to.include({ 'tools/call': 1 });
    });
  });

  it('over stdio too: the task followed to its result, a tool that answers in full unchanged', async function () {
    const client = await connected2(stdio2());
    clients.push(client as unknown as Client);
    expect(client.getProtocolEra()).to.equal('modern');
    const { hub, seen } = taskEvents();
    const all = await fromMcp(client, { id: 'jobs', hub, tasks: { initialMs: 30 } });
    expect(await run(all, 'render', { pages: 2, pageMs: 50 })).to.equal('rendered 2 pages (approval not asked)');
    expect(await run(all, 'echo', { text: 'plain' })).to.equal('plain');
    expect(seen[seen.length - 1]).to.equal('status:completed:done');
    const counted = await serverStats(client);
    expect(counted.calls['render']).to.equal(1);
    expect(counted.calls['tasks/get']).to.be.at.least(1);
  });

  it('over stdio, a server that pushes its task’s changes (notifications/tasks): each push ends the wait, the task done long before its minute-long poll interval', async function () {
    const client = await connected2(stdio2());
    clients.push(client as unknown as Client);
    const { hub, seen } = taskEvents();
    const all = await fromMcp(client, { id: 'jobs', hub });
    const started = Date.now();
    expect(await run(all, 'render', { pages: 3, pageMs: 60, pollMs: 60_000, push: true })).to.equal('rendered 3 pages (approval not asked)');
    expect(Date.now() - started, 'not a poll interval later').to.be.lessThan(5_000);
    const counted = await serverStats(client);
    expect(counted.calls['tasks/get'] ?? 0, 'nothing polled: every change was pushed').to.equal(0);
    expect(seen).to.deep.equal([
      'created:working:queued',
      'status:working:page 1 of 3',
      'status:working:page 2 of 3',
      'status:working:page 3 of 3',
      'status:completed:done',
    ]);
  });

  it('a task result passes through the breaker once: the breaker judged the call that created it', async () => {
    const { hub, events } = taskEvents();
    expect(await run(await tools({ hub, tasks: { initialMs: 30 } }), 'render', { pages: 1, pageMs: 30 })).to.be.a('string');
    expect(events.filter((e) => e.type === 'circuit')).to.deep.equal([]);
  });
});
