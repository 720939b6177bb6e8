/**
 * The package as a new user gets it: `npm pack`, the tarball installed with npm into a fresh
 * consumer project in the OS temp dir (npm uses its cache first: `--prefer-offline`), then
 *
 * - with no optional peer installed: the root entry, and every entry the README lists without a
 *   peer, loads by ESM `import` and CommonJS `require` (Node ≥ 20.19's require(esm)); a
 *   TypeScript consumer of the root entry has 0 errors under `node16` and `bundler` resolution
 *   (the bundler one with DOM types and no `@types/node`); esbuild bundles the root entry for the
 *   browser with no `node:` import;
 * - with every optional peer installed (the versions in devDependencies): EVERY entry point of the
 *   exports map (iterated, so a new subpath is covered by adding it) loads by `import` and by
 *   `require`, and a TypeScript consumer importing all of them has 0 errors under both
 *   resolutions, and a CommonJS one (`.cts`, `import x = require(…)`) under `nodenext`.
 *
 * Node runs in child processes without the spec's tsx loader, as a user's would. TypeScript and
 * esbuild are the project's own (tools, not dependencies of the package).
 */
import { expect } from 'chai';
import { build } from 'esbuild';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { ROOT, entryPoints, expectLoaded, importsOf, loadEntries, npmEnv, npmPack, packageJson, packageOf, shippedExamples, subpathTable } from './npmPack.js';

const pkg = packageJson();
const entries = entryPoints(pkg);
const examples = shippedExamples(pkg);
const peersOf = new Map(subpathTable().map((row) => [row.specifier, row.peers]));
/** Entries that need no optional peer (the README's table says `—`). */
const bare = entries.filter((e) => (peersOf.get(e.specifier) ?? []).length === 0);
const optionalPeers = Object.entries(pkg.peerDependenciesMeta ?? {})
  .filter(([, meta]) => meta.optional === true)
  .map(([name]) => name);

function npm(cwd: string, args: string[]): void {
  execFileSync('npm', [...args, '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'], {
    cwd,
    env: npmEnv(),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
}

/** `npm install <tarball>` as a user types it (scripts allowed, warnings shown): what npm printed on stderr. */
function npmInstall(cwd: string, tarball: string): string {
  const result = spawnSync('npm', ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=warn'], {
    cwd,
    env: npmEnv(),
    encoding: 'utf8',
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  if (result.status !== 0) throw new Error(`npm install ${tarball} failed: ${result.stderr}`);
  return result.stderr;
}

/** Parsed declaration files, shared by every program of this spec (lib.dom.d.ts, @types/node… parse once). */
const parsed = new Map<string, ts.SourceFile | undefined>();
function cachingHost(options: ts.CompilerOptions): ts.CompilerHost {
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) => {
    if (!fileName.endsWith('.d.ts')) return getSourceFile(fileName, languageVersion, onError, shouldCreate);
    const key = `${typeof languageVersion === 'object' ? JSON.stringify(languageVersion) : languageVersion}:${fileName}`;
    if (!parsed.has(key)) parsed.set(key, getSourceFile(fileName, languageVersion, onError, shouldCreate));
    return parsed.get(key);
  };
  return host;
}

type Resolution = 'node16' | 'nodenext' | 'bundler';

/** Type errors of `files` under a tsconfig with the given resolution (strict, lib checks on); DOM types without Node's unless `dom` says. */
function typeErrors(dir: string, resolution: Resolution, files: string[], nodeTypes: boolean, dom = !nodeTypes): string[] {
  const config = {
    compilerOptions: {
      target: 'ES2022',
      module: resolution === 'bundler' ? 'esnext' : resolution,
      moduleResolution: resolution,
      lib: dom ? ['ES2022', 'DOM', 'DOM.Iterable'] : ['ES2022'],
      types: nodeTypes ? ['node'] : [],
      strict: true,
      noEmit: true,
      skipLibCheck: false,
    },
    files,
  };
  const name = `tsconfig.${resolution}${nodeTypes ? '' : '.browser'}${nodeTypes && dom ? '.dom' : ''}.json`;
  writeFileSync(join(dir, name), JSON.stringify(config, null, 2));
  const tsconfig = ts.parseJsonConfigFileContent(config, ts.sys, dir);
  expect(tsconfig.errors.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))).to.deep.equal([]);
  const program = ts.createProgram(tsconfig.fileNames, tsconfig.options, cachingHost(tsconfig.options));
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file ? `${d.file.fileName.replace(dir, '.')}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}` : name;
    return `${where} TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
}

describe('the packed tarball in a fresh consumer project', function () {
  this.timeout(120_000);
  let dir = '';
  let consumer = '';
  let packed: Set<string> = new Set();
  let installWarnings = '';

  before(function () {
    dir = mkdtempSync(join(tmpdir(), 'rxheal-pack-'));
    const { tarball, files } = npmPack(dir);
    packed = files;
    consumer = join(dir, 'consumer');
    mkdirSync(consumer);
    writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }, null, 2));
    installWarnings = npmInstall(consumer, tarball!);
    // the TypeScript consumer's own tool: Node's types, for the node16 check
    mkdirSync(join(consumer, 'node_modules', '@types'), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules', '@types', 'node'), join(consumer, 'node_modules', '@types', 'node'), 'dir');
  });

  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('packs the built entry points, their types, the LICENSE and the README', () => {
    for (const { specifier, conditions } of entries) {
      for (const [condition, target] of Object.entries(conditions))
        expect(packed.has(target.slice(2)), `${specifier} "${condition}": ${target}`).to.equal(true);
    }
    for (const file of ['LICENSE', 'README.md', 'package.json']) expect(packed.has(file), file).to.equal(true);
  });

  it('installs without a warning: the package runs no script on install (npm 11 warns about each one not yet allowed, prepare included)', () => {
    expect(installWarnings.split('\n').filter((l) => l.trim() !== '')).to.deep.equal([]);
    const scripts = (pkg['scripts'] ?? {}) as Record<string, string>;
    // what npm runs when the package is installed (from a tarball, a git URL or a folder)
    expect(Object.keys(scripts).filter((name) => /^(pre|post)?(install|prepare)$/.test(name))).to.deep.equal([]);
    expect(scripts['prepack'], 'npm pack and npm publish build dist/ first').to.equal('npm run build');
  });

  describe('with no optional peer installed', () => {
    it('installs rxheal with only its own dependencies and rxjs (no optional peer)', () => {
      for (const peer of optionalPeers) {
        expect(() => execFileSync(process.execPath, ['-e', `require.resolve('${peer}/package.json')`], { cwd: consumer, stdio: 'ignore' }), peer).to.throw();
      }
    });

    it(`loads the root entry and every entry without a peer by import and by require (${bare.map((e) => e.specifier).join(', ')})`, () => {
      const names = bare.map((e) => e.specifier);
      expectLoaded(loadEntries(consumer, 'esm', names), loadEntries(consumer, 'cjs', names), bare);
      const root = loadEntries(consumer, 'esm', [pkg.name])[pkg.name] as string[];
      expect(root).to.include.members(['retryWithBackoff', 'circuitBreak', 'reflectOnError', 'fallbackTo', 'degradeAfter', 'runAgent']);
    });

    it('rxheal/chaos without fast-check: an import and a require fail saying which peer to install', () => {
      for (const [kind, source] of [
        ['import', "import('rxheal/chaos').then(() => process.exit(3), (e) => { console.error(e.message); process.exit(1); })"],
        ['require', "try { require('rxheal/chaos'); process.exit(3); } catch (e) { console.error(e.message); process.exit(1); }"],
      ] as const) {
        const result = spawnSync(process.execPath, ['-e', source], { cwd: consumer, encoding: 'utf8' });
        expect(result.status, `${kind}: ${result.stderr}`).to.equal(1);
        expect(result.stderr, kind).to.contain(
          'rxheal/chaos needs fast-check (4.x), an optional peer dependency of rxheal that is not installed: npm install --save-dev fast-check',
        );
      }
    });

    it('typechecks a TypeScript consumer of the root entry under node16 and bundler resolution, 0 errors', () => {
      writeFileSync(
        join(consumer, 'root.ts'),
        `import * as rxheal from 'rxheal';
import { CircuitBreakerRegistry, HttpError, circuitBreak, retryWithBackoff, type RetryWithBackoffBaseOptions } from 'rxheal';
import { defer } from 'rxjs';

const options: RetryWithBackoffBaseOptions = { maxRetries: 3, initialBackoffMs: 500 };
const breakers = new CircuitBreakerRegistry({ failureThreshold: 5 });
export const call$ = defer(async () => {
  throw new HttpError(503);
}).pipe(retryWithBackoff(options), circuitBreak(breakers.get('tool:x')));
export const names: string[] = Object.keys(rxheal);
`,
      );
      expect(typeErrors(consumer, 'node16', ['root.ts'], true), 'node16').to.deep.equal([]);
      expect(typeErrors(consumer, 'bundler', ['root.ts'], false), 'bundler, DOM types, no @types/node').to.deep.equal([]);
    });

    it('bundles the root entry for the browser with esbuild: no node: import, no Node built-in', async () => {
      writeFileSync(join(consumer, 'browser.js'), "export * from 'rxheal';\n");
      const result = await build({
        absWorkingDir: consumer,
        entryPoints: ['browser.js'],
        bundle: true,
        platform: 'browser',
        format: 'esm',
        write: false,
        metafile: true,
        logLevel: 'silent',
      });
      expect(result.errors).to.deep.equal([]);
      const inputs = Object.keys(result.metafile.inputs);
      expect(inputs.some((i) => i.includes('node_modules/rxheal/dist/index.js'))).to.equal(true);
      expect(inputs.filter((i) => i.startsWith('node:'))).to.deep.equal([]);
      const code = result.outputFiles[0]!.text;
      expect(code.match(/["']node:[a-z/_]+["']/g) ?? []).to.deep.equal([]);
      const imports = result.metafile.outputs[Object.keys(result.metafile.outputs)[0]!]!.imports;
      expect(
        imports.filter((i) => i.external),
        'nothing left for the runtime to resolve',
      ).to.deep.equal([]);
    });
  });

  describe('with every optional peer installed (devDependencies versions)', () => {
    before(function () {
      const devDependencies = pkg.devDependencies ?? {};
      const wanted = optionalPeers.map((peer) => `${peer}@${devDependencies[peer] ?? pkg.peerDependencies?.[peer] ?? 'latest'}`);
      // @ai-sdk/provider's own .d.ts import 'json-schema', whose types are only its devDependency
      // (upstream): an AI SDK user typechecking with skipLibCheck off installs them too
      if (wanted.length > 0) npm(consumer, ['install', ...wanted, '@types/json-schema@^7.0.15']);
      // and what the shipped examples import besides rxheal (the frameworks they heal, zod…), as a user copying one installs it
      const extra = [...new Set(examples.flatMap((file) => importsOf(readFileSync(join(consumer, 'node_modules', pkg.name, file), 'utf8')).map(packageOf)))]
        .filter(
          (name): name is string =>
            name !== undefined && name !== pkg.name && !optionalPeers.includes(name) && name !== 'rxjs' && !(name in (pkg['dependencies'] as object)),
        )
        .map((name) => `${name}@${devDependencies[name] ?? 'latest'}`);
      if (extra.length > 0) npm(consumer, ['install', ...extra]);
    });

    it(`the shipped examples, copied out of the installed package, typecheck as they are (${examples.join(', ')}), 0 errors`, () => {
      mkdirSync(join(consumer, 'examples'), { recursive: true });
      for (const file of examples) copyFileSync(join(consumer, 'node_modules', pkg.name, file), join(consumer, file));
      // Node's types and the DOM's: the AI SDK's own declarations name fetch's (HeadersInit, RequestCredentials)
      expect(typeErrors(consumer, 'node16', examples, true, true), 'node16').to.deep.equal([]);
    });

    it(`loads EVERY entry point of the exports map by import and by require (${entries.map((e) => e.specifier).join(', ')})`, () => {
      const names = entries.map((e) => e.specifier);
      expectLoaded(loadEntries(consumer, 'esm', names), loadEntries(consumer, 'cjs', names), entries);
    });

    it('typechecks a TypeScript consumer of every entry point under node16 and bundler resolution, 0 errors', () => {
      const lines = entries.map((e, i) => `import * as entry${i} from '${e.specifier}';`);
      lines.push(`export const loaded = [${entries.map((_, i) => `entry${i}`).join(', ')}];`);
      writeFileSync(join(consumer, 'all.ts'), `${lines.join('\n')}\n`);
      expect(typeErrors(consumer, 'node16', ['all.ts'], true), 'node16').to.deep.equal([]);
      expect(typeErrors(consumer, 'bundler', ['all.ts'], true), 'bundler').to.deep.equal([]);
    });

    it('typechecks a CommonJS TypeScript consumer (.cts, require of every entry) under nodenext (TypeScript ≥ 5.8), 0 errors', () => {
      const lines = entries.map((e, i) => `import entry${i} = require('${e.specifier}');`);
      lines.push(`export const loaded = [${entries.map((_, i) => `entry${i}`).join(', ')}];`);
      writeFileSync(join(consumer, 'all.cts'), `${lines.join('\n')}\n`);
      expect(typeErrors(consumer, 'nodenext', ['all.cts'], true), 'nodenext').to.deep.equal([]);
    });
  });
});
