/**
 * The file journal's lease: one lock file per lease generation in the run's folder,
 * `lease.<generation>`, holding `{ holder, until, released }` (JSON; `until` in ms on the store's
 * clock). The newest generation is the lease. A claim writes its lock file under a temporary name,
 * fsyncs it, and `link`s it to the next generation's name: `link` fails when that name exists, so
 * of two processes taking over a lapsed lease at once exactly one gets the generation; the other
 * reads it back and is refused. A claim that finds, after its `link`, a generation newer than its
 * own (it was slow, and others took the run meanwhile) gives its generation up. Renewing and
 * releasing replace the session's own lock file (`rename`, atomic) and check that no newer
 * generation exists: a former holder's renewal touches only its own, older file. Older lock files
 * are removed by each new claim.
 *
 * @module
 */
/// <reference types="node" />
import { randomBytes } from 'node:crypto';
import { link, open, readdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** A lease as its lock file says. */
export interface LeaseFile {
  readonly generation: number;
  readonly holder: string | undefined;
  readonly until: number;
  readonly released: boolean;
}

const LEASE = /^lease\.(\d{1,15})$/;

const code = (error: unknown): unknown => (error as { code?: unknown } | undefined)?.code;

/** Swallows `ENOENT` (a file another process removed first). */
const unlessGone = (error: unknown): undefined => {
  if (code(error) !== 'ENOENT') throw error;
  return undefined;
};

/** The newest lease generation in `dir` (0: none). */
export async function newestGeneration(dir: string): Promise<number> {
  let newest = 0;
  for (const name of (await readdir(dir).catch(unlessGone)) ?? []) {
    const m = LEASE.exec(name);
    if (m) newest = Math.max(newest, Number(m[1]));
  }
  return newest;
}

/** The lease: the newest lock file (a lock file that cannot be read — a crash while it was renewed — is a lapsed lease of no one known). */
export async function readLease(dir: string): Promise<LeaseFile | undefined> {
  for (;;) {
    const generation = await newestGeneration(dir);
    if (generation === 0) return undefined;
    const text = await readFile(join(dir, `lease.${generation}`), 'utf8').catch(unlessGone);
    // removed meanwhile: a newer claim cleaned it up, read again
    if (text === undefined) continue;
    try {
      const { holder, until, released } = JSON.parse(text) as { holder?: unknown; until?: unknown; released?: unknown };
      return { generation, holder: typeof holder === 'string' ? holder : undefined, until: typeof until === 'number' ? until : 0, released: released === true };
    } catch {
      return { generation, holder: undefined, until: 0, released: false };
    }
  }
}

/** Writes `content` to a fresh temporary file in `dir`, fsync'd; returns its path. */
async function temporary(dir: string, content: string): Promise<string> {
  const path = join(dir, `tmp.${randomBytes(8).toString('hex')}`);
  const handle = await open(path, 'wx');
  try {
    await handle.writeFile(content);
    await handle.sync();
  } finally {
    await handle.close();
  }
  return path;
}

/** fsync of a folder: a name linked, renamed or made in it is durable. */
export async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

const content = (holder: string, until: number, released: boolean): string => JSON.stringify({ holder, until, released });

/** Whether `lease` refuses `holder` at `now`: live, not released, and another's. */
export const refuses = (lease: LeaseFile | undefined, holder: string, now: number): boolean =>
  lease !== undefined && !lease.released && lease.until > now && lease.holder !== holder;

/**
 * Takes the next lease generation for `holder` until `until`, unless `refusal` says the current
 * one refuses: the new generation, or the lease that refused.
 */
export async function takeLease(dir: string, holder: string, now: () => number, leaseMs: number): Promise<{ generation: number } | { refused: LeaseFile }> {
  for (;;) {
    const current = await readLease(dir);
    if (current !== undefined && refuses(current, holder, now())) return { refused: current };
    const generation = (current?.generation ?? 0) + 1;
    const temp = await temporary(dir, content(holder, now() + leaseMs, false));
    let linked = true;
    try {
      await link(temp, join(dir, `lease.${generation}`));
    } catch (error) {
      if (code(error) !== 'EEXIST') throw error;
      linked = false;
    } finally {
      await unlink(temp).catch(unlessGone);
    }
    // another process took that generation first: read the lease again
    if (!linked) continue;
    if ((await newestGeneration(dir)) !== generation) {
      // a slow claim: others took newer generations meanwhile — give this one up
      await unlink(join(dir, `lease.${generation}`)).catch(unlessGone);
      continue;
    }
    await syncDir(dir);
    for (const name of await readdir(dir)) {
      const m = LEASE.exec(name);
      if (m && Number(m[1]) < generation) await unlink(join(dir, name)).catch(unlessGone);
    }
    return { generation };
  }
}

/**
 * Rewrites generation `generation`'s lock file (a renewal, a release) if it is still the newest:
 * false when a newer claim took the run (before or during the rewrite).
 */
export async function rewriteLease(dir: string, generation: number, holder: string, until: number, released: boolean): Promise<boolean> {
  if ((await newestGeneration(dir)) !== generation) return false;
  const path = join(dir, `tmp.${randomBytes(8).toString('hex')}`);
  await writeFile(path, content(holder, until, released), { flag: 'wx' });
  await rename(path, join(dir, `lease.${generation}`));
  return (await newestGeneration(dir)) === generation;
}
