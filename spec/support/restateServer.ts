/**
 * A real Restate server for specs: the Linux binary `@restatedev/restate-server` ships in its npm
 * package (spec/support/majors installs it, Node ≥ 22), started on 127.0.0.1 — ingress, admin and
 * its node port each a free port, its state in a temporary `--base-dir` — with invocations retried
 * every 100–500 ms (so that a service process killed and started again is reached at once). The
 * admin API registers a deployment; the ingress sends invocations and attaches to their output.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, stopChild } from './redisServer.js';

/** A running server. */
export interface RestateServer {
  readonly ingress: string;
  readonly admin: string;
  /** Registers (again: `force`) the service deployment at `uri`. */
  register(uri: string): Promise<void>;
  /** Sends an invocation of `service`/`handler` (no input): its id. */
  send(service: string, handler: string): Promise<string>;
  /** Waits for an invocation's output (its JSON). */
  attach(invocationId: string): Promise<unknown>;
  /** Waits for an invocation's end: its status and body (an error's message for a failed one). */
  outcome(invocationId: string): Promise<{ status: number; body: string }>;
  /** Kills an invocation (no more retries). */
  kill(invocationId: string): Promise<void>;
  stop(): Promise<void>;
}

async function until(what: string, ok: () => Promise<boolean>, ms: number): Promise<void> {
  for (const end = Date.now() + ms; ;) {
    if (await ok().catch(() => false)) return;
    if (Date.now() > end) throw new Error(`the Restate server: ${what} within ${ms} ms`);
    await sleep(50);
  }
}

/** Starts the server binary at `binary`. */
export async function startRestate(binary: string): Promise<RestateServer> {
  const dir = mkdtempSync(join(tmpdir(), 'rxheal-restate-'));
  const [ingressPort, adminPort, nodePort] = [await freePort(), await freePort(), await freePort()];
  const config = join(dir, 'restate.toml');
  writeFileSync(
    config,
    ['[default-retry-policy]', 'initial-interval = "100ms"', 'exponentiation-factor = 2.0', 'max-interval = "500ms"', 'max-attempts = 200', ''].join('\n'),
  );
  const child: ChildProcess = spawn(binary, ['--base-dir', join(dir, 'data'), '--config-file', config], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {
      ...process.env,
      RESTATE_INGRESS__BIND_ADDRESS: `127.0.0.1:${ingressPort}`,
      RESTATE_ADMIN__BIND_ADDRESS: `127.0.0.1:${adminPort}`,
      RESTATE_BIND_ADDRESS: `127.0.0.1:${nodePort}`,
      RESTATE_ADVERTISED_ADDRESS: `http://127.0.0.1:${nodePort}`,
      RESTATE_LOG_FILTER: 'warn',
      DO_NOT_TRACK: '1',
    },
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const ingress = `http://127.0.0.1:${ingressPort}`;
  const admin = `http://127.0.0.1:${adminPort}`;
  const stop = async (): Promise<void> => {
    await stopChild(child, 'SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await until('admin health', async () => (await fetch(`${admin}/health`)).ok, 30_000);
    await until('ingress health', async () => (await fetch(`${ingress}/restate/health`)).ok, 30_000);
  } catch (error) {
    await stop();
    throw new Error(`${(error as Error).message}: ${stderr}`, { cause: error });
  }
  return {
    ingress,
    admin,
    async register(uri) {
      const res = await fetch(`${admin}/deployments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ uri, force: true }),
      });
      if (!res.ok) throw new Error(`registering ${uri}: ${res.status} ${await res.text()}`);
    },
    async send(service, handler) {
      const res = await fetch(`${ingress}/${service}/${handler}/send`, { method: 'POST' });
      if (!res.ok) throw new Error(`sending ${service}/${handler}: ${res.status} ${await res.text()}`);
      return ((await res.json()) as { invocationId: string }).invocationId;
    },
    async attach(id) {
      const res = await fetch(`${ingress}/restate/invocation/${id}/attach`);
      if (!res.ok) throw new Error(`attaching to ${id}: ${res.status} ${await res.text()}`);
      return res.json();
    },
    async outcome(id) {
      const res = await fetch(`${ingress}/restate/invocation/${id}/attach`);
      return { status: res.status, body: await res.text() };
    },
    async kill(id) {
      const res = await fetch(`${admin}/invocations/${id}/kill`, { method: 'PATCH' });
      if (res.ok) return;
      const old = await fetch(`${admin}/invocations/${id}?mode=kill`, { method: 'DELETE' });
      if (!old.ok) throw new Error(`killing ${id}: ${res.status} ${await res.text()}; ${old.status} ${await old.text()}`);
    },
    stop,
  };
}
