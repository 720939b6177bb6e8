import { expect } from 'chai';
import { readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as Record<string, unknown>;

describe('the published package', () => {
  it('is ESM, side-effect free, with types and an exports map', () => {
    expect(pkg['name']).to.equal('rxheal');
    expect(pkg['type']).to.equal('module');
    expect(pkg['sideEffects']).to.equal(false);
    expect(pkg['exports']).to.deep.include({ '.': { types: './dist/index.d.ts', import: './dist/index.js' } });
  });

  it('takes rxjs as a peer (one copy, so TestScheduler virtualises our timers)', () => {
    expect(pkg['peerDependencies']).to.have.property('rxjs', '^7.8.0');
    // every other peer is optional (e.g. @opentelemetry/api for rxheal/otel)
    const optional = pkg['peerDependenciesMeta'] as Record<string, { optional?: boolean }> | undefined;
    for (const name of Object.keys(pkg['peerDependencies'] as object)) if (name !== 'rxjs') expect(optional?.[name]?.optional, name).to.equal(true);
    expect(pkg['dependencies']).not.to.have.property('rxjs');
  });

  it('resolves "rxheal" through its exports map to the built ESM, with the same API as src', async () => {
    const built = (await import('rxheal')) as Record<string, unknown>;
    const source = (await import('../src/index.js')) as Record<string, unknown>;
    expect(Object.keys(built).sort()).to.deep.equal(Object.keys(source).sort());
    for (const name of ['retryWithBackoff', 'circuitBreak', 'classifyError', 'createClassifier', 'CircuitBreaker', 'CircuitBreakerRegistry']) {
      expect(built[name], name).to.be.a('function');
    }
    const testing = (await import('rxheal/testing')) as Record<string, unknown>;
    for (const name of ['scriptedModel', 'scriptedTool', 'fromMarbles', 'describeEvent', 'record']) expect(testing[name], name).to.be.a('function');
    const providers = (await import('rxheal/providers')) as Record<string, unknown>;
    for (const name of ['SseParser', 'parseSse', 'fetchSse', 'decodeSse', 'openAICompatibleModel', 'anthropicModel']) expect(providers[name], name).to.be.a('function');
    const events = (await import('rxheal/events')) as Record<string, unknown>;
    for (const name of ['TextDeltaCodec', 'ToolResultEventCodec', 'AgentEventCodec']) expect(events[name], name).to.have.property('decode');
    const otel = (await import('rxheal/otel')) as Record<string, unknown>;
    expect(otel['instrument']).to.be.a('function');
    const types = readFileSync(new URL('../dist/index.d.ts', import.meta.url), 'utf8');
    expect(types).to.contain('retryWithBackoff').and.to.contain('CircuitBreaker');
  });
});
