/**
 * The kill points of the real-process specs: four episodes of five kills (20 in all), each
 * episode's points in the order its run reaches them — journal writes (before, while in flight,
 * after), each tool's side effect (before, after), the answer's deltas.
 */
import type { KillPoint } from './durableAgentWorker.js';

export const KILL_PLANS: readonly (readonly KillPoint[])[] = [
  [
    { at: 'append', n: 1, phase: 'during' },
    { at: 'append', n: 2, phase: 'after' },
    { at: 'effect', tool: 'lookup', phase: 'before' },
    { at: 'effect', tool: 'book', phase: 'after' },
    { at: 'delta', n: 5 },
  ],
  [
    { at: 'effect', tool: 'lookup', phase: 'after' },
    { at: 'effect', tool: 'book', phase: 'before' },
    { at: 'append', n: 1, phase: 'before' },
    { at: 'effect', tool: 'notify', phase: 'after' },
    { at: 'delta', n: 20 },
  ],
  [
    { at: 'append', n: 3, phase: 'during' },
    { at: 'append', n: 4, phase: 'after' },
    { at: 'effect', tool: 'notify', phase: 'before' },
    { at: 'delta', n: 1 },
    { at: 'delta', n: 12 },
  ],
  [
    { at: 'append', n: 1, phase: 'after' },
    { at: 'append', n: 3, phase: 'before' },
    { at: 'append', n: 2, phase: 'during' },
    { at: 'append', n: 3, phase: 'after' },
    { at: 'delta', n: 25 },
  ],
];
