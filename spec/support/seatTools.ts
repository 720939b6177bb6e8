/**
 * The three tools of the kill specs' seat booking, their side effects lines in files that outlive
 * the process (`<tool>.log` in `dir`: `<callId> <epoch ms>`, appended and fsync'd): `lookup`
 * (idempotent), `book` (verifiable: the file is its ledger), `notify` (cannot be checked
 * afterwards). A process dies (`die`) before or after a tool's effect where `kill` says so.
 */
import { appendFileSync, closeSync, fsyncSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as t from 'io-ts';
import { defineTool, fallbackModel, retryWithBackoff, type AgentEvent } from '../../src/index.js';
import type { WorkerLine } from './durableAgentWorker.js';
import { openAICompatibleModel } from '../../src/providers/openai.js';

/** A kill at a tool's side effect (the other kill points pass through). */
export type EffectKill = { readonly at: string; readonly tool?: string; readonly phase?: string };

/** The tools, their effects in `dir`. */
export function seatTools(dir: string, kill: EffectKill | undefined, die: () => never) {
  /** A side effect that outlives the process: a line appended and fsync'd. */
  function effect(tool: string, callId: string): void {
    if (kill?.at === 'effect' && kill.tool === tool && kill.phase === 'before') die();
    const fd = openSync(join(dir, `${tool}.log`), 'a');
    appendFileSync(fd, `${callId} ${Date.now()}\n`);
    fsyncSync(fd);
    closeSync(fd);
    if (kill?.at === 'effect' && kill.tool === tool && kill.phase === 'after') die();
  }

  const effectsOf = (tool: string): string[] => effectLines(dir, tool);

  const Seat = t.type({ seat: t.string });
  const lookup = defineTool({
    name: 'lookup',
    description: 'Whether a seat is free',
    args: Seat,
    idempotent: true,
    execute: async ({ seat }, { callId }) => {
      effect('lookup', callId!);
      return { seat, free: true };
    },
  });
  const book = defineTool({
    name: 'book',
    description: 'Books a seat (charges the card)',
    args: Seat,
    execute: async ({ seat }, { callId }) => {
      effect('book', callId!);
      return { seat, booked: true };
    },
    // the booking system can say whether a booking was made: the effect file is its ledger
    verify: async ({ seat }, { callId }) =>
      effectsOf('book').some((line) => line.startsWith(`${callId} `))
        ? { applied: true as const, result: { seat, booked: true } }
        : { applied: false as const },
  });
  const notify = defineTool({
    name: 'notify',
    description: 'Texts the customer (cannot be checked afterwards)',
    args: t.type({ text: t.string }),
    execute: async (_args, { callId }) => {
      effect('notify', callId!);
      return { sent: true };
    },
  });
  return [lookup, book, notify];
}

/** The agent's model: the two local providers behind fallbackModel (a stream cut mid-answer restarts on the next), each retried once. */
export function seatModel(primary: string, secondary: string) {
  return fallbackModel(
    [
      openAICompatibleModel({ id: 'primary', baseURL: `${primary}/v1`, model: 'm' }),
      openAICompatibleModel({ id: 'secondary', baseURL: `${secondary}/v1`, model: 'm' }),
    ],
    {
      midStream: 'restart',
      perModel: (id, stream$, { hub }) => stream$.pipe(retryWithBackoff({ hub, target: `model:${id}`, maxRetries: 1, initialBackoffMs: 20 })),
    },
  );
}

/** The lines of `<tool>.log` in `dir`: each side effect of the tool (none: no file). */
export function effectLines(dir: string, tool: string): string[] {
  try {
    return readFileSync(join(dir, `${tool}.log`), 'utf8')
      .split('\n')
      .filter(Boolean);
  } catch {
    return [];
  }
}

/** An agent event as a kill spec's worker prints it: its type, whether replayed, when, and what names it (a message's role and call, a call's id). */
export function eventLine(e: AgentEvent): WorkerLine {
  const replayed = (e as { replayed?: boolean }).replayed === true;
  const more =
    e.type === 'message'
      ? { role: e.message.role, id: 'toolCallId' in e.message ? e.message.toolCallId : undefined }
      : e.type === 'tool-outcome-unknown'
        ? { id: e.callId, name: e.tool }
        : 'id' in e
          ? { id: e.id as string }
          : {};
  return { event: e.type, replayed, at: Date.now(), ...more };
}
