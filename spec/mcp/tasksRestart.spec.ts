/**
 * A task survives a restart of the client's process: a durable agent run (file journal) whose tool
 * is a long MCP task on the 2.x fixture server (served over Streamable HTTP by this process, so
 * the task lives on while the client dies). The first worker process SIGKILLs itself while polling;
 * a second one resumes the run from its journal and polls the same task — `render` was called once
 * on the server, its work done once — and the run answers with the task's result.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { startHttpFixture2, type FixtureHttpServer2 } from './fixtures/httpServer2.js';
import { forgetTasks, taskLog } from './fixtures/tasks2.js';

const WORKER = new URL('./fixtures/taskWorker.ts', import.meta.url).pathname;

type Line = Record<string, unknown> & { readonly at: number };

/** One worker process, to its end (its own kill, or the run's). */
function life(args: Record<string, unknown>): Promise<{ lines: Line[]; killed: boolean }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', WORKER, JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'pipe'] });
    const lines: Line[] = [];
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    createInterface({ input: child.stdout }).on('line', (line) => lines.push(JSON.parse(line) as Line));
    child.once('error', reject);
    child.once('close', (code, signal) => {
      if (signal !== 'SIGKILL' && code !== 0) reject(new Error(`worker exited ${code}: ${stderr}`));
      else resolve({ lines, killed: signal === 'SIGKILL' });
    });
  });
}

describe('rxheal/mcp: an MCP task survives a restart of the client’s process (durable run, 2.x server over HTTP)', function () {
  this.timeout(60_000);
  let server: FixtureHttpServer2;
  beforeEach(async () => {
    taskLog.length = 0;
    server = await startHttpFixture2();
  });
  afterEach(async () => {
    await server.stop();
    forgetTasks();
  });

  it('killed while polling, resumed from the journal: the same task polled to its end, render called once, the answer its result', async () => {
    const base = { url: server.url.href, dir: mkdtempSync(join(tmpdir(), 'rxheal-task-run-')), runId: 'report-1' };
    const first = await life({ ...base, killAfterPolls: 2 });
    expect(first.killed, JSON.stringify(first.lines)).to.equal(true);
    const created = first.lines.find((l) => l['task'] === 'created');
    expect(created, 'the server answered with a task').to.not.equal(undefined);
    const taskId = created!['taskId'] as string;

    const second = await life(base);
    expect(second.killed).to.equal(false);
    const resumed = second.lines.filter((l) => l['task'] !== undefined);
    expect(resumed[0], 'picked up again, not created').to.include({ task: 'resumed', taskId });
    expect(resumed.some((l) => l['task'] === 'created')).to.equal(false);
    expect(second.lines.find((l) => l['done'] !== undefined)).to.include({ done: 'answer', text: 'The report: rendered 8 pages (approval not asked)' });

    expect(server.methods['tools/call'], 'render was called once, in the first process').to.equal(1);
    expect(new Set(taskLog.filter((l) => l.method === 'tasks/get').map((l) => l.taskId))).to.deep.equal(new Set([taskId]));
    expect(
      taskLog.filter((l) => l.method === 'tasks/cancel'),
      'nothing cancelled it',
    ).to.deep.equal([]);
    const polledAfter = taskLog.filter((l) => l.method === 'tasks/get' && l.at > first.lines[first.lines.length - 1]!.at);
    expect(polledAfter.length, 'the second process polled it').to.be.greaterThan(0);
  });

  it('a run that ended is not run again: a third process replays the answer, and the server hears nothing', async () => {
    const base = { url: server.url.href, dir: mkdtempSync(join(tmpdir(), 'rxheal-task-run-')), runId: 'report-2' };
    const done = await life(base);
    expect(done.lines.find((l) => l['done'] !== undefined)).to.include({ done: 'answer' });
    const calls = server.methods['tools/call'];
    const polls = taskLog.length;
    const again = await life(base);
    expect(again.lines.find((l) => l['done'] !== undefined)).to.include({ done: 'answer', text: 'The report: rendered 8 pages (approval not asked)' });
    expect(server.methods['tools/call']).to.equal(calls);
    expect(taskLog.length).to.equal(polls);
  });
});
