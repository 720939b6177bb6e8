/**
 * McpLink (src/mcp/link.ts) with a stand-in client whose every answer the spec settles by hand:
 * which failure marks the connection broken, and of which connection. A failure of an old
 * connection that lands after the new one is up says nothing of the new one (the SDK's own
 * `close()` settles every call in flight first; a client by shape need not). The real transports
 * are in the other specs.
 */
import { expect } from 'chai';
import { TestScheduler } from 'rxjs/testing';
import { lastValueFrom, type Observable } from 'rxjs';
import { fromMcp, McpSessionExpiredError, type McpClient } from '../../src/mcp/index.js';

interface Pending {
  readonly name: string;
  resolve(result: { readonly [key: string]: unknown }): void;
  reject(error: unknown): void;
}

/** What a Streamable-HTTP client throws for a 404 to a request carrying a session id. */
const sessionGone = (): Error =>
  Object.assign(new Error('Streamable HTTP error: Error POSTing to endpoint: {"error":"Session not found"}'), { name: 'StreamableHTTPError', code: 404 });

function standIn(): { client: McpClient; calls: Pending[]; connects: () => number } {
  const calls: Pending[] = [];
  let connects = 0;
  const client: McpClient = {
    listTools: () => Promise.resolve({ tools: [{ name: 'charge', inputSchema: { type: 'object' }, annotations: { destructiveHint: true } }] }),
    callTool: (params) => new Promise((resolve, reject) => calls.push({ name: params.name, resolve, reject })),
    ping: () => Promise.resolve({}),
    connect: () => {
      connects++;
      return Promise.resolve();
    },
    // leaves the calls in flight as they are: their answers (or failures) come when the spec says
    close: () => Promise.resolve(),
    getServerVersion: () => ({ name: 'stand-in', version: '1' }),
    transport: {},
  };
  return { client, calls, connects: () => connects };
}

/** The stand-in's one tool, from fromMcp with a transport factory; `call()` makes one call of it. */
async function linked(): Promise<{ calls: Pending[]; connects: () => number; call: () => Promise<unknown> }> {
  const { client, calls, connects } = standIn();
  // virtual time: the calls' deadlines never fire while the spec settles them by hand
  const scheduler = new TestScheduler((a, b) => {
    expect(a).to.deep.equal(b);
  });
  const [charge] = await fromMcp(client, { reconnect: () => ({}), scheduler });
  return { calls, connects, call: () => lastValueFrom(charge!.execute({}, { signal: new AbortController().signal }) as Observable<unknown>) };
}

const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('rxheal/mcp link: which failure, of which connection, makes the next call reconnect', () => {
  it("an old connection's expired session, failing after the new connection is up, does not make the next call replace the new one", async () => {
    const { calls, connects, call } = await linked();
    const old = call().catch((error: unknown) => error);
    const expired = call().catch((error: unknown) => error);
    calls[1]!.reject(sessionGone());
    expect(await expired).to.be.instanceOf(McpSessionExpiredError);
    // the next call opens a new session first
    const onNew = call();
    await flush();
    expect(connects()).to.equal(1);
    calls[2]!.resolve({ content: [{ type: 'text', text: 'charged' }] });
    expect(await onNew).to.equal('charged');
    // the old session's call learns of its expiry now
    calls[0]!.reject(sessionGone());
    expect(await old).to.be.instanceOf(McpSessionExpiredError);
    const next = call();
    await flush();
    expect(calls, 'sent at once, on the new connection').to.have.length(4);
    expect(connects(), 'no second reconnection').to.equal(1);
    calls[3]!.resolve({ content: [{ type: 'text', text: 'charged again' }] });
    expect(await next).to.equal('charged again');
  });

  it('a network error of one exchange (fetch failed) is not a broken connection; a closed transport (Connection closed) is', async () => {
    const { calls, connects, call } = await linked();
    const refused = call().catch((error: unknown) => error);
    calls[0]!.reject(
      Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }) }),
    );
    expect(await refused).to.be.instanceOf(TypeError);
    const after = call();
    await flush();
    expect(connects(), 'the next call is sent as it is').to.equal(0);
    calls[1]!.reject(Object.assign(new Error('MCP error -32000: Connection closed'), { name: 'McpError', code: -32000 }));
    await after.catch(() => undefined);
    const reconnected = call();
    await flush();
    expect(connects()).to.equal(1);
    calls[2]!.resolve({ content: [{ type: 'text', text: 'ok' }] });
    expect(await reconnected).to.equal('ok');
  });
});
