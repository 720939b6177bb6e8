/**
 * runAgent end to end with an MCP server's tools (the SDK's McpServer over stdio): arguments the
 * schema refuses (the server never called) → reflection; arguments the tool refuses (`isError`)
 * → reflection; the corrected call → the answer. And the degradation path: the server's breaker
 * open, the model is told its tools are unavailable.
 */
import { expect } from 'chai';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { lastValueFrom, toArray } from 'rxjs';
import {
  CapabilityRegistry,
  CircuitBreakerRegistry,
  reflectOnError,
  retryWithBackoff,
  runAgent,
  type AgentEvent,
  type Message,
  type ModelRequest,
} from '../../src/index.js';
import { finish, scriptedModel, textDeltas, toolCall } from '../../src/testing/index.js';
import { fromMcp } from '../../src/mcp/index.js';
import { connected, stdio } from './support.js';

const lastTool = (request: ModelRequest): Extract<Message, { role: 'tool' }> => {
  const message = [...request.messages].reverse().find((m) => m.role === 'tool');
  if (!message || message.role !== 'tool') throw new Error('no tool message');
  return message;
};

describe('runAgent with rxheal/mcp tools (a real McpServer over stdio)', function () {
  this.timeout(20_000);
  let client: Client;
  before(async () => {
    client = await connected(stdio());
  });
  after(async () => {
    await client.close();
  });

  it('bad arguments → reflection, isError → reflection, the corrected call → the answer', async () => {
    const tools = await fromMcp(client, { id: 'fx' });
    const seen: string[] = [];
    const model = scriptedModel('fake', [
      [toolCall('c1', 'get_weather', { city: 'Paris', units: 'kelvin' }), finish('tool-calls')],
      (request) => {
        seen.push(lastTool(request).content);
        return [toolCall('c2', 'get_weather', { city: 'Pariss', units: 'celsius' }), finish('tool-calls')];
      },
      (request) => {
        seen.push(lastTool(request).content);
        return [toolCall('c3', 'get_weather', { city: 'Paris', units: 'celsius' }), finish('tool-calls')];
      },
      (request) => {
        const result = JSON.parse(lastTool(request).content) as { temperature: number };
        return [...textDeltas(`It is ${result.temperature} °C in Paris.`), finish()];
      },
    ]);
    const before = ((await client.callTool({ name: 'stats', arguments: {} })).structuredContent as { calls: Record<string, number> }).calls['get_weather'] ?? 0;
    const events: AgentEvent[] = await lastValueFrom(
      runAgent({
        model,
        tools,
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        toolPipeline: (call, call$, { hub }) =>
          call$.pipe(retryWithBackoff({ hub, target: `tool:${call.name}`, maxRetries: 2, initialBackoffMs: 10 }), reflectOnError()),
      }).pipe(toArray()),
    );
    expect(events.filter((e) => e.type === 'reflection')).to.have.length(2);
    expect(seen[0]).to.match(/units/);
    expect(seen[1]).to.contain("unknown city 'Pariss'; known cities: Paris, London, Tokyo");
    const answer = events
      .filter((e) => e.type === 'text-delta')
      .map((e) => (e as { text: string }).text)
      .join('');
    expect(answer).to.equal('It is 18 °C in Paris.');
    const after = ((await client.callTool({ name: 'stats', arguments: {} })).structuredContent as { calls: Record<string, number> }).calls['get_weather'] ?? 0;
    expect(after - before, 'the schema-refused call never reached the server; the other two did, once each').to.equal(2);
  });

  it("the degradation path: the server's breaker open, the next turn's instruction says its tools are unavailable", async () => {
    const dying = await connected(stdio());
    const capabilities = new CapabilityRegistry();
    const tools = await fromMcp(dying, { id: 'fx', breakers: new CircuitBreakerRegistry({ failureThreshold: 1, resetTimeoutMs: 60_000 }), capabilities });
    const model = scriptedModel('fake', [
      [toolCall('c1', 'crash', {}), finish('tool-calls')],
      (request) => {
        const system = request.messages[0];
        return [...textDeltas(system?.role === 'system' && system.content.includes("MCP server 'fx' is unavailable") ? 'told' : 'not told'), finish()];
      },
    ]);
    const events = await lastValueFrom(runAgent({ model, tools, capabilities, messages: [{ role: 'user', content: 'Crash it' }] }).pipe(toArray()));
    expect(
      events
        .filter((e) => e.type === 'text-delta')
        .map((e) => (e as { text: string }).text)
        .join(''),
    ).to.equal('told');
    expect(events.some((e) => e.type === 'degraded' && e.capability === 'echo')).to.equal(true);
    await dying.close();
  });
});
