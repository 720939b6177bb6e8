/**
 * A journaled run on the file journal, on disk in a temporary directory, in real time: cut in the
 * middle of a tool call, resumed by a fresh agent over a fresh `fileJournal` of the same directory
 * (as a new process would build it), then suspended for an approval and resumed once more with it.
 */
import { expect } from 'chai';
import * as t from 'io-ts';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { firstValueFrom, lastValueFrom, Observable, of, toArray } from 'rxjs';
import type { AgentEvent, ModelEvent } from '../../src/core/events/events.js';
import type { Model, ModelRequest } from '../../src/core/model/model.js';
import { RunLockedError } from '../../src/core/journal/errors.js';
import { fileJournal } from '../../src/durable/fileJournal.js';
import { resumeAgent } from '../../src/sources/resumeAgent.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import { finish, toolCall } from '../../src/testing/index.js';

/** `attempt()`, again every 50 ms (for up to 5 s) while the run's lease is still held by the process before. */
async function untilFree<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof RunLockedError) || tries >= 100) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

describe('a journaled run on the file journal (a real directory), resumed from disk', function () {
  this.timeout(20_000);
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'rxheal-run-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const requests: string[] = [];
  const model: Model = {
    id: 'fake',
    stream: (request: ModelRequest): Observable<ModelEvent> => {
      requests.push(JSON.stringify(request.messages));
      const last = request.messages.at(-1)!;
      if (last.role !== 'tool') return of(toolCall('c1', 'lookup', { q: 'LH 400' }), toolCall('c2', 'pay', { amount: 90 }), finish('tool-calls'));
      const tools = request.messages.filter((m) => m.role === 'tool').map((m) => m.content);
      return of<ModelEvent[]>({ type: 'text-delta', text: `Done: ${tools.join(' / ')}` }, finish());
    },
  };
  let lookups = 0;
  let payments = 0;
  /** The first lookup hangs (the process dies inside it); later ones answer. */
  const lookup = defineTool({
    name: 'lookup',
    description: 'Looks a flight up',
    args: t.type({ q: t.string }),
    idempotent: true,
    execute: ({ q }) => (++lookups === 1 ? new Promise<string>(() => undefined) : Promise.resolve(`found ${q}`)),
  });
  const pay = defineTool({
    name: 'pay',
    description: 'Pays (an effect, approved by a person)',
    args: t.type({ amount: t.number }),
    needsApproval: ({ amount }) => amount > 50,
    execute: ({ amount }) => (payments++, Promise.resolve(`paid ${amount}`)),
  });
  const config = () => ({
    model,
    tools: [lookup, pay],
    messages: [{ role: 'user' as const, content: 'Book LH 400' }],
    runId: 'order-7421',
    journal: fileJournal({ dir }),
    leaseMs: 5_000,
  });

  it('cut inside a tool, resumed from the file: the run goes on; suspended for the payment; approved, it pays once and answers', async () => {
    // process 1: runs until the lookup hangs, then dies (unsubscribes)
    const seen: AgentEvent[] = [];
    await new Promise<void>((done) => {
      const sub = runAgent(config()).subscribe((e) => {
        seen.push(e);
        if (e.type === 'call-start' && e.kind === 'tool') setTimeout(() => (sub.unsubscribe(), done()), 20);
      });
    });
    expect(seen.filter((e) => e.type === 'message').length).to.equal(1);
    expect(readdirSync(dir).length).to.be.greaterThan(0);

    // process 2: a fresh journal over the same directory; the idempotent lookup runs again, the payment waits for approval.
    // The first process's release on unsubscribe is a file write it does not wait for: on a loaded machine the resume
    // may come first and find the lease held (RunLockedError), as a real resumer would; it tries again shortly, as one does
    const second = await untilFree(() => lastValueFrom(resumeAgent(config()).pipe(toArray())));
    expect(second[0]).to.deep.include({ type: 'tool-call', replayed: true });
    expect(second.at(-2)).to.deep.equal({ type: 'approval-requested', callId: 'c2', tool: 'pay', args: { amount: 90 } });
    expect(second.at(-1)).to.deep.equal({ type: 'suspended', runId: 'order-7421' });
    expect(payments).to.equal(0);

    // process 3: approves; the payment runs once, the model answers
    const third = await untilFree(() => lastValueFrom(resumeAgent({ ...config(), approvals: { c2: { approved: true } } }).pipe(toArray())));
    const answer = third.filter((e) => e.type === 'message' && e.message.role === 'assistant').at(-1);
    expect(answer).to.deep.include({ message: { role: 'assistant', content: 'Done: found LH 400 / paid 90' } });
    expect(payments).to.equal(1);
    expect(requests.length).to.equal(2);

    // and once more: the answer replayed from disk, nothing called
    const fourth = await untilFree(() => lastValueFrom(resumeAgent(config()).pipe(toArray())));
    expect(fourth.every((e) => e.replayed === true)).to.equal(true);
    expect(requests.length).to.equal(2);
    expect(payments).to.equal(1);
    // the lease was released at the end: another holder claims it at once
    const session = await firstValueFrom(fileJournal({ dir }).claim({ runId: 'order-7421', holder: 'someone-else', leaseMs: 1000 }));
    expect(session.entries.at(-1)!.data).to.deep.include({ type: 'end', outcome: 'answer' });
    await firstValueFrom(session.release());
  });
});
