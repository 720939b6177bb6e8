import { expect } from 'chai';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { runHealingRun } from '../observe/healingRun.js';
import { instrument, type InstrumentOptions } from '../../src/otel/index.js';
import { readRegistry, type Registry } from './registry.js';
import { sdk } from './sdk.js';
import { eventByEvent, healingRun, hedgedTurn, perModelRetries, pipelineRetry, PROVIDERS } from './scenarios.js';

/** rxheal's own namespace: names the conventions leave to the instrumentation. */
const OWN = 'rxheal.';
/** Attributes whose values must be members of their enum (the others take values of the instrumentation's own too). */
const CLOSED = ['gen_ai.operation.name', 'gen_ai.token.type', 'mcp.method.name'];

/** Everything the recorded telemetry says that the registry does not define. */
async function violations(registry: Registry, record: (options: InstrumentOptions) => void): Promise<string[]> {
  const { exporter, options, collect } = sdk();
  record(options);
  const problems: string[] = [];
  const attribute = (where: string, key: string, value: unknown, allowed?: readonly string[]): void => {
    if (key.startsWith(OWN)) return;
    const members = registry.attributes.get(key);
    if (members === undefined) problems.push(`${where}: attribute ${key} is not in the registry`);
    else if (allowed !== undefined && !allowed.includes(key)) problems.push(`${where}: attribute ${key} is not one of the metric's`);
    else if (CLOSED.includes(key) && !members.includes(String(value))) problems.push(`${where}: ${key} = ${String(value)} is not one of ${members.join(', ')}`);
  };
  for (const span of exporter.getFinishedSpans() as ReadableSpan[]) {
    if (span.attributes['gen_ai.operation.name'] === undefined) problems.push(`span ${span.name}: no gen_ai.operation.name`);
    for (const [key, value] of Object.entries(span.attributes)) attribute(`span ${span.name}`, key, value);
    for (const event of span.events)
      for (const [key, value] of Object.entries(event.attributes ?? {})) attribute(`span ${span.name} event ${event.name}`, key, value);
  }
  for (const [name, points] of Object.entries(await collect())) {
    if (name.startsWith(OWN)) {
      for (const [attributes] of points) for (const [key, value] of Object.entries(attributes)) attribute(`metric ${name}`, key, value);
      continue;
    }
    const allowed = registry.metrics.get(name);
    if (allowed === undefined) problems.push(`metric ${name} is not in the registry`);
    else for (const [attributes] of points) for (const [key, value] of Object.entries(attributes)) attribute(`metric ${name}`, key, value, allowed);
  }
  return problems;
}

describe('rxheal/otel against the semantic conventions registry (spec/fixtures/otel-semconv)', () => {
  const registry = readRegistry();

  it('the registry read: GenAI, MCP and error attributes with their enum members, GenAI metrics with their attributes', () => {
    expect(registry.attributes.get('gen_ai.operation.name')).to.include.members(['chat', 'invoke_agent', 'execute_tool']);
    expect(registry.attributes.get('gen_ai.provider.name')).to.include.members(['openai', 'anthropic']);
    expect(registry.attributes.get('mcp.method.name')).to.include('tools/call');
    expect(registry.attributes.get('error.type')).to.deep.equal(['_OTHER']);
    expect(registry.attributes.has('gen_ai.usage.cache_read.input_tokens')).to.equal(true);
    expect(registry.attributes.has('gen_ai.system')).to.equal(false); // deprecated: not in the registry's current files
    expect(registry.metrics.get('gen_ai.client.token.usage')).to.include.members(['gen_ai.token.type', 'gen_ai.provider.name', 'gen_ai.request.model']);
    expect(registry.metrics.get('gen_ai.client.operation.duration')).to.include.members(['error.type', 'gen_ai.operation.name']);
  });

  it('the healing run on the current conventions: every attribute and metric name is in the registry', async () => {
    expect(await violations(registry, healingRun)).to.deep.equal([]);
  });

  it('a model retried in the model pipeline: likewise', async () => {
    expect(await violations(registry, pipelineRetry)).to.deep.equal([]);
  });

  it('a fallbackModel retrying each model: likewise', async () => {
    expect(await violations(registry, perModelRetries)).to.deep.equal([]);
  });

  it("a run's turn hedged: likewise", async () => {
    expect(await violations(registry, hedgedTurn)).to.deep.equal([]);
  });

  it('a resumed stream, a hedge, cache counts, an MCP tool, a run that errors: likewise', async () => {
    expect(await violations(registry, eventByEvent)).to.deep.equal([]);
  });

  it('the check finds what the registry lacks: the old conventions name the provider gen_ai.system', async () => {
    const legacy = (options: InstrumentOptions) => runHealingRun((events$) => instrument(events$, { ...options, semconv: 'legacy', providers: PROVIDERS }));
    const problems = await violations(registry, legacy);
    expect(problems).to.include('span chat primary: attribute gen_ai.system is not in the registry');
    expect(problems.every((p) => p.includes('gen_ai.system'))).to.equal(true);
  });
});
