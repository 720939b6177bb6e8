/**
 * The docs site as `npm run docs` builds it — TypeDoc with the project's typedoc.json: the README
 * as the landing page, the guides and the operators' pages as documents, the API reference of
 * every entry point — built once per process into a temporary folder (the repository's own
 * docs/site/ is left as it is), and served from there on 127.0.0.1 for a browser.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import serveStatic from 'serve-static';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TYPEDOC = join(ROOT, 'node_modules', 'typedoc', 'bin', 'typedoc');

/** A built site: its folder, and what TypeDoc printed (its warnings and errors, one a line). */
export interface BuiltSite {
  readonly dir: string;
  readonly problems: readonly string[];
  readonly code: number;
}

let building: Promise<BuiltSite> | undefined;

/** The site, built once per process (removed when the process exits). */
export function builtSite(): Promise<BuiltSite> {
  building ??= new Promise((resolve) => {
    const dir = mkdtempSync(join(tmpdir(), 'rxheal-site-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    execFile(
      process.execPath,
      [TYPEDOC, '--out', dir],
      { cwd: ROOT, timeout: 240_000, env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } },
      (error, stdout, stderr) => {
        const problems = `${stdout}\n${stderr}`
          .replace(/\x1b\[[0-9;]*m/g, '') // eslint-disable-line no-control-regex -- TypeDoc's colours, if it prints them anyway
          .split('\n')
          .filter((line) => /^\[(warning|error)\]/.test(line) && !/^\[warning\] Found 0 errors and 0 warnings/.test(line));
        resolve({ dir, problems, code: error ? Number((error as { code?: number }).code ?? 1) : 0 });
      },
    );
  });
  return building;
}

/** Every file of a folder, relative to it. */
export function filesOf(dir: string, base = dir): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesOf(path, base) : [relative(base, path)];
  });
}

/** The site served on 127.0.0.1 (a request for another Host is refused, as a rebound name would be). */
export async function serveSite(dir: string): Promise<{ readonly url: string; close(): Promise<void> }> {
  const files = serveStatic(dir, { index: ['index.html'] });
  let host = '';
  const server: Server = createServer((req, res) => {
    if (req.headers.host !== host) {
      res.writeHead(403).end();
      return;
    }
    files(req, res, () => res.writeHead(404).end());
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url: `http://${host}/`, close: () => new Promise<void>((done) => server.close(() => done())) };
}
