/**
 * The adapter subpaths as a user installs them: `rxheal/ai-sdk`, `rxheal/openai`,
 * `rxheal/anthropic`, `rxheal/langchain`, `rxheal/mcp`, `rxheal/chaos` (on fast-check) resolve through the exports map to the built ESM; each
 * framework is an optional peer; the subpaths on no framework (`rxheal/fleet`, `rxheal/events`,
 * `rxheal/providers`) resolve the same way and reach none; the root entry (code and types) never reaches a framework, and a
 * consumer project that installs none builds, typechecks and runs against it.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  exports: Record<string, unknown>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
  devDependencies: Record<string, string>;
  dependencies: Record<string, string>;
};

/** Each subpath, the framework packages it stands on, and what it exports. */
const SUBPATHS = {
  './ai-sdk': { frameworks: ['@ai-sdk/provider', 'ai'], exports: ['fromAiSdk', 'toAiSdk', 'StreamRestartError'] },
  './openai': { frameworks: ['openai'], exports: ['fromOpenAI'] },
  './anthropic': { frameworks: ['@anthropic-ai/sdk'], exports: ['fromAnthropic'] },
  './langchain': { frameworks: ['@langchain/core'], exports: ['fromLangChain', 'toLangChain', 'RxhealChatModel', 'StreamRestartError'] },
  './chaos': {
    frameworks: ['fast-check'],
    exports: [
      'checkHealing',
      'assertHealing',
      'replaySchedule',
      'chaosModel',
      'chaosTool',
      'recordIncident',
      'replayIncident',
      'marbleDiagram',
      'replaySpec',
      'incidentSpec',
      'ChaosInputError',
    ],
  },
  './mcp': {
    frameworks: ['@modelcontextprotocol/sdk'],
    exports: [
      'fromMcp',
      'watchMcpTools',
      'isIdempotentTool',
      'McpConnectionError',
      'McpProtocolError',
      'McpSessionExpiredError',
      'McpTimeoutError',
      'McpToolResultError',
    ],
  },
} as const;
const FRAMEWORKS = [
  ...new Set(Object.values(SUBPATHS).flatMap((s) => s.frameworks)),
  '@langchain/openai',
  '@ai-sdk/openai',
  '@ai-sdk/anthropic',
  '@ai-sdk/openai-compatible',
];

/** Every file of dist/ a file reaches through relative imports, and every bare specifier on the way. */
function reach(entry: string, options: { readonly docs?: boolean } = {}): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string): void => {
    if (files.has(file)) return;
    files.add(file);
    const read = readFileSync(file, 'utf8');
    // `docs: false`: not the imports of TSDoc examples (`/** … import pg from 'pg' … */`)
    const text = options.docs === false ? read.replace(/\/\*\*[\s\S]*?\*\//g, '') : read;
    for (const m of text.matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]|\/\/\/\s*<reference types="([^"]+)"/g)) {
      const spec = m[1] ?? m[2]!;
      if (spec.startsWith('.')) visit(resolve(dirname(file), file.endsWith('.d.ts') ? spec.replace(/\.js$/, '.d.ts') : spec));
      else packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
    }
  };
  visit(entry);
  return { files, packages };
}

const run = (cmd: string, args: string[], cwd: string): Promise<{ code: number; out: string }> =>
  new Promise((done) =>
    execFile(cmd, args, { cwd, timeout: 90_000 }, (error, stdout, stderr) =>
      done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
    ),
  );

describe('the adapter subpaths', function () {
  this.timeout(120_000);

  for (const [subpath, { frameworks, exports }] of Object.entries(SUBPATHS)) {
    it(`rxheal${subpath.slice(1)}: in the exports map (types, import, default), resolves to the built ESM with ${exports.join(', ')}`, async () => {
      const name = subpath.slice(2);
      expect(pkg.exports[subpath]).to.deep.equal({ types: `./dist/${name}/index.d.ts`, import: `./dist/${name}/index.js`, default: `./dist/${name}/index.js` });
      const built = (await import(`rxheal/${name}`)) as Record<string, unknown>;
      for (const e of exports) expect(built[e], e).to.be.a('function');
    });

    it(`rxheal${subpath.slice(1)}: ${frameworks.join(' and ')} an optional peer (and a devDependency), never a dependency`, () => {
      for (const framework of frameworks) {
        expect(pkg.peerDependencies, framework).to.have.property(framework);
        expect(pkg.peerDependenciesMeta[framework]?.optional, framework).to.equal(true);
        expect(pkg.devDependencies, framework).to.have.property(framework);
        expect(pkg.dependencies, framework).not.to.have.property(framework);
      }
    });
  }

  it('rxheal/durable and rxheal/postgres: in the exports map, resolve to the built ESM, and reach no peer but rxjs (a pg pool is taken by shape: pg an optional peer and a devDependency, never imported)', async () => {
    const stores = { durable: ['fileJournal', 'memoryJournal'], postgres: ['postgresJournal', 'postgresJournalSchema'] };
    for (const [name, functions] of Object.entries(stores)) {
      expect(pkg.exports[`./${name}`]).to.deep.equal({
        types: `./dist/${name}/index.d.ts`,
        import: `./dist/${name}/index.js`,
        default: `./dist/${name}/index.js`,
      });
      const built = (await import(`rxheal/${name}`)) as Record<string, unknown>;
      for (const f of functions) expect(built[f], f).to.be.a('function');
      for (const file of [`dist/${name}/index.js`, `dist/${name}/index.d.ts`])
        expect(
          [...reach(join(ROOT, file), { docs: false }).packages].filter((p) => p in pkg.peerDependencies),
          `${file}: the peers it reaches`,
        ).to.deep.equal(['rxjs']);
    }
    expect(pkg.peerDependenciesMeta['pg']?.optional).to.equal(true);
    expect(pkg.devDependencies).to.have.property('pg');
    expect(pkg.dependencies).not.to.have.property('pg');
  });

  /** The subpaths built on no framework, and what each exports (values). */
  const PLAIN = {
    './fleet': ['MemoryBreakerStore', 'MemoryRateLimitStore', 'fleetNode', 'snapshotRegistry', 'restoreRegistry', 'snapshotBreaker', 'restoreBreaker'],
    './events': ['AgentEventCodec', 'MessageCodec', 'tapLogs', 'logRecord', 'formatLogLine', 'summarizeEvents'],
    './providers': ['readHeader', 'parseRetryAfter', 'impliedStatus', 'sanitizeText', 'errorText', 'baseDelay', 'abortable', 'fromAsyncIterable'],
  } as const;
  for (const [subpath, names] of Object.entries(PLAIN)) {
    it(`rxheal${subpath.slice(1)}: in the exports map, resolves to the built ESM with ${names.join(', ')}, and reaches no framework`, async () => {
      const name = subpath.slice(2);
      expect(pkg.exports[subpath]).to.deep.equal({ types: `./dist/${name}/index.d.ts`, import: `./dist/${name}/index.js`, default: `./dist/${name}/index.js` });
      const built = (await import(`rxheal/${name}`)) as Record<string, unknown>;
      for (const e of names) expect(built[e], e).to.not.equal(undefined);
      const reached = [...reach(join(ROOT, `dist/${name}/index.js`)).packages, ...reach(join(ROOT, `dist/${name}/index.d.ts`)).packages];
      expect(reached.filter((p) => FRAMEWORKS.includes(p))).to.deep.equal([]);
    });
  }
  it('rxheal/fleet: its FLEET_NODE is the symbol every copy of rxheal agrees on', async () => {
    const fleet = (await import('rxheal/fleet')) as { FLEET_NODE: symbol };
    expect(fleet.FLEET_NODE).to.equal(Symbol.for('rxheal.fleetNode'));
  });

  it('the root entry reaches no framework: not in its code, not in its types', () => {
    const code = reach(join(ROOT, 'dist/index.js'));
    const types = reach(join(ROOT, 'dist/index.d.ts'));
    expect(code.files.size).to.be.greaterThan(20);
    expect(types.files.size).to.be.greaterThan(20);
    expect([...code.packages].filter((p) => FRAMEWORKS.includes(p))).to.deep.equal([]);
    expect([...types.packages].filter((p) => FRAMEWORKS.includes(p))).to.deep.equal([]);
    expect([...code.files, ...types.files].filter((f) => f.includes('/adapters/'))).to.deep.equal([]);
  });

  it('…while each subpath does reach its framework (the walk above sees them)', () => {
    for (const [subpath, { frameworks }] of Object.entries(SUBPATHS)) {
      const name = subpath.slice(2);
      const reached = new Set([...reach(join(ROOT, `dist/${name}/index.js`)).packages, ...reach(join(ROOT, `dist/${name}/index.d.ts`)).packages]);
      expect(
        frameworks.some((f) => reached.has(f)),
        subpath,
      ).to.equal(true);
    }
  });

  it('a consumer that installs no framework builds, typechecks (skipLibCheck off) and runs against the root entry', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rxheal-consumer-'));
    try {
      const modules = join(dir, 'node_modules');
      const self = join(modules, 'rxheal');
      mkdirSync(self, { recursive: true });
      cpSync(join(ROOT, 'dist'), join(self, 'dist'), { recursive: true });
      cpSync(join(ROOT, 'package.json'), join(self, 'package.json'));
      // rxheal's dependencies and its one required peer, nothing else
      for (const dep of [...Object.keys(pkg.dependencies), 'rxjs', 'tslib']) {
        mkdirSync(dirname(join(modules, dep)), { recursive: true }); // a scoped one (@noble/hashes) lives in its scope's folder
        symlinkSync(join(ROOT, 'node_modules', dep), join(modules, dep), 'dir');
      }
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', type: 'module', private: true }));
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2022',
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            lib: ['ES2022', 'DOM'],
            strict: true,
            skipLibCheck: false,
            skipDefaultLibCheck: true,
            types: [],
            outDir: 'out',
          },
          files: ['main.ts'],
        }),
      );
      writeFileSync(
        join(dir, 'main.ts'),
        [
          "import { lastValueFrom, toArray } from 'rxjs';",
          "import { classifyError, fallbackModel, streamModel, type Model, type TurnEvent } from 'rxheal';",
          "const broken: Model = { id: 'broken', stream: () => { throw Object.assign(new Error('busy'), { status: 503 }); } };",
          "const ok: Model = { id: 'ok', stream: () => [{ type: 'text-delta', text: 'healed' }, { type: 'finish', reason: 'stop' }] };",
          "const events: TurnEvent[] = await lastValueFrom(streamModel(fallbackModel([broken, ok]), { messages: [{ role: 'user', content: 'hi' }], tools: [] }).pipe(toArray()));",
          "console.log(events.map((e) => (e.type === 'text-delta' ? e.text : e.type)).join(' '), classifyError(new Error('x')).category);",
        ].join('\n'),
      );
      const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
      const build = await run(process.execPath, [tsc, '-p', dir], dir);
      expect(build.out).to.equal('');
      expect(build.code).to.equal(0);
      const main = await run(process.execPath, [join(dir, 'out/main.js')], dir);
      expect(main.out.trim()).to.equal('healed finish unknown');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
