/**
 * rxheal/mcp over stdio when the server dies: the breaker per server (`mcp:<id>`), the tools
 * unavailable in the capability registry while it is open and restored after a probe, reconnection
 * with a transport factory (a server dead mid-call or between calls; backoff between failed
 * attempts, no cap), a destructive tool run exactly once whatever fails, and tools/list_changed
 * followed by watchMcpTools — on each pairing of the SDK majors (support.ts).
 */
import { expect } from 'chai';
import { lastValueFrom } from 'rxjs';
import {
  CapabilityRegistry,
  CircuitBreakerRegistry,
  CircuitOpenError,
  callTool,
  classifyError,
  retryWithBackoff,
  ToolError,
  type Tool,
} from '../../src/index.js';
import { fromMcp, McpConnectionError, McpOutcomeUnknownError, watchMcpTools } from '../../src/mcp/index.js';
import { failure, ledger, PAIRINGS, run, toolNamed, until, type AnyClient } from './support.js';

for (const pairing of PAIRINGS)
  describe(`rxheal/mcp over stdio: breaker, capabilities, reconnection: ${pairing.label}`, function () {
    this.timeout(30_000);
    const open: AnyClient[] = [];
    const connect = async (transport: () => unknown): Promise<AnyClient> => {
      const c = await pairing.connect(transport);
      open.push(c);
      return c;
    };
    const stdio = (env?: Record<string, string>): (() => unknown) => pairing.transport(env);
    afterEach(async () => {
      await Promise.all(open.splice(0).map((c) => c.close().catch(() => undefined)));
    });

    it('a dead server is reconnected by the next call (a fresh process from the factory); the call that died is not repeated', async () => {
      const transport = stdio();
      let made = 0;
      const factory = (): unknown => (made++, transport());
      const client = await connect(transport);
      const tools = await fromMcp(client, { id: 'fx', reconnect: factory });
      const died = await failure(run(tools, 'crash', {}));
      expect((died as ToolError).cause).to.be.instanceOf(McpConnectionError);
      expect(made).to.equal(0);
      expect(await run(tools, 'echo', { text: 'back' })).to.equal('back');
      expect(made).to.equal(1);
    });

    it('a server that died between calls is reconnected before the next call is sent: a destructive call, never sent to the dead one, runs once on the new process', async () => {
      const book = ledger();
      const transport = stdio({ MCP_LEDGER: book.path });
      let first: { readonly pid: number | null } | undefined;
      let made = 0;
      const client = await connect(() => (first = transport() as { readonly pid: number | null }));
      const tools = await fromMcp(client, { id: 'fx', reconnect: () => (made++, transport()) });
      expect(await run(tools, 'echo', { text: 'up' })).to.equal('up');
      process.kill(first!.pid!, 'SIGKILL');
      await until(() => client.transport === undefined);
      expect(await run(tools, 'charge', { amount: 9 })).to.equal('charged 9');
      expect(book.lines()).to.deep.equal(['9']);
      expect(made).to.equal(1);
    });

    it('failed reconnections back off (no attempt before the wait is over), with no cap on their number', async () => {
      const good = stdio();
      let attempts = 0;
      let broken = true;
      const factory = (): unknown => {
        attempts++;
        return broken ? pairing.missing() : good();
      };
      const client = await connect(good);
      // a breaker that does not open here: the backoff alone is under test
      const tools = await fromMcp(client, {
        id: 'fx',
        reconnect: factory,
        reconnectBackoff: { initialMs: 300, maxMs: 300 },
        breakers: new CircuitBreakerRegistry({ failureThreshold: 100 }),
      });
      await failure(run(tools, 'crash', {}));
      const first = await failure(run(tools, 'echo', { text: 'x' }));
      expect((first as ToolError).message).to.match(/reconnection failed/);
      const soon = await failure(run(tools, 'echo', { text: 'x' }));
      expect((soon as ToolError).message).to.match(/next reconnection attempt in \d+ ms/);
      expect(attempts, 'no attempt inside the backoff').to.equal(1);
      for (let i = 0; i < 4; i++) {
        await new Promise((r) => setTimeout(r, 320));
        await failure(run(tools, 'echo', { text: 'x' }));
      }
      expect(attempts, 'an attempt after each wait, never a give-up').to.equal(5);
      broken = false;
      await new Promise((r) => setTimeout(r, 320));
      expect(await run(tools, 'echo', { text: 'up again' })).to.equal('up again');
    });

    it('one breaker per server (mcp:<id>): open, the tools are unavailable to the model; a probe after the reset timeout reconnects and restores them', async () => {
      const transport = stdio();
      let serverUp = false;
      let downAttempts = 0;
      const factory = (): unknown => (serverUp ? transport() : (downAttempts++, pairing.missing()));
      const client = await connect(transport);
      const breakers = new CircuitBreakerRegistry({ failureThreshold: 2, resetTimeoutMs: 400 });
      const capabilities = new CapabilityRegistry();
      const tools = await fromMcp(client, { id: 'fx', breakers, capabilities, reconnect: factory, reconnectBackoff: { initialMs: 1, maxMs: 1 } });
      const events: string[] = [];
      capabilities.events$.subscribe((e) => events.push(`${e.type}:${e.capability}`));
      await failure(run(tools, 'crash', {}));
      await new Promise((r) => setTimeout(r, 5));
      await failure(run(tools, 'echo', { text: 'x' }));
      expect(breakers.get('mcp:fx').state).to.equal('open');
      expect(capabilities.isAvailable('echo')).to.equal(false);
      expect([...capabilities.degraded().keys()]).to.deep.equal(tools.map((t) => t.name));
      expect(capabilities.systemPromptSuffix()).to.contain("MCP server 'fx' is unavailable");
      const rejected = await failure(run(tools, 'echo', { text: 'x' }));
      expect((rejected as ToolError).cause).to.be.instanceOf(CircuitOpenError);
      expect(classifyError(rejected).category).to.equal('circuit_open');
      // the first probe finds the server still down: open again, probed again later
      expect(downAttempts, 'the call after the crash tried to reconnect').to.equal(1);
      await until(() => downAttempts === 2, 3000);
      expect(breakers.get('mcp:fx').state, 'the failed probe re-opened it').to.equal('open');
      expect(capabilities.isAvailable('echo')).to.equal(false);
      serverUp = true;
      // a 2.x client negotiating over stdio spawns the server twice per connection (a probe, then the session)
      await until(() => capabilities.isAvailable('echo'), pairing.client === 2 ? 15_000 : 5000);
      expect(breakers.get('mcp:fx').state).to.equal('closed');
      expect(events.filter((e) => e.startsWith('restored:'))).to.have.length(tools.length);
      expect(await run(tools, 'echo', { text: 'restored' })).to.equal('restored');
    });

    it('a destructive tool runs exactly once whatever fails: the server dies after charging, retries and reconnection around it', async () => {
      const book = ledger();
      const transport = stdio({ MCP_LEDGER: book.path });
      const client = await connect(transport);
      const tools = await fromMcp(client, { id: 'fx', reconnect: transport });
      const charge = toolNamed(tools, 'charge');
      expect(charge.idempotent).to.equal(false);
      const error = await failure(
        lastValueFrom(
          callTool(charge, { id: 'p1', name: 'charge', args: { amount: 42, die: true } }).pipe(retryWithBackoff({ maxRetries: 3, initialBackoffMs: 10 })),
        ),
      );
      expect(error).to.be.instanceOf(ToolError);
      // on 2026-07-28 nothing resumes the call: it may have run, and says so
      expect((error as ToolError).cause).to.be.instanceOf(pairing.modern ? McpOutcomeUnknownError : McpConnectionError);
      expect(classifyError(error)).to.include({ retryable: false, withheld: 'not_idempotent' });
      expect(book.lines()).to.deep.equal(['42']);
      // an idempotent tool is retried over the same failure, on a reconnected server
      expect(
        await lastValueFrom(
          callTool(toolNamed(tools, 'echo'), { id: 'p2', name: 'echo', args: { text: 'ok' } }).pipe(retryWithBackoff({ maxRetries: 2, initialBackoffMs: 10 })),
        ),
      ).to.equal('ok');
      expect(book.lines()).to.deep.equal(['42']);
    });

    it('watchMcpTools: the tools, then the tools again after notifications/tools/list_changed', async () => {
      const client = await connect(stdio());
      const lists: Tool<Record<string, unknown>, unknown>[][] = [];
      const subscription = watchMcpTools(client, { prefix: 'w_' }).subscribe((list) => lists.push(list));
      await until(() => lists.length === 1);
      expect(lists[0]!.map((t) => t.name)).not.to.include('w_fresh');
      expect(await run(lists[0]!, 'w_add_tool', { name: 'fresh' })).to.equal('added fresh');
      await until(() => lists.length === 2);
      expect(await run(lists[1]!, 'w_fresh', {})).to.equal('I am fresh');
      subscription.unsubscribe();
    });
  });
