/**
 * "Download this run as a test": one answer of the demo as a spec that replays it in virtual time
 * (rxheal/chaos's recordIncident and incidentSpec): what each provider call and tool call
 * suffered, read off the answer's events, replayed against the demo's own pipeline over stand-ins
 * (examples/demo/replay.ts). Used by the page (a download link under each answer) and its spec.
 */
import type { AgentEvent } from '../../src/index.js';
import { recordIncident, type Incident } from '../../src/chaos/incident.js';
import { incidentSpec } from '../../src/chaos/report.js';
import type { DemoReplay } from './replay.js';

/**
 * The downloaded spec: where it goes, and its source.
 *
 * @example
 * ```ts
 * const { filename, source }: RunAsTest = runAsTest(events, asked, 1); // 'demo-run-1.spec.ts'
 * ```
 */
export interface RunAsTest {
  /** The file name to save it as (under the project's `spec/`, where `npm test` runs it). */
  readonly filename: string;
  /** The spec's source (TypeScript that is also JavaScript). */
  readonly source: string;
  /** The incident it replays. */
  readonly incident: Incident;
}

/**
 * The spec replaying one answer: its events (all the run emitted, in order) and how the page
 * asked it (the conversation up to the question, the mid-stream mode, the breakers open then).
 *
 * @example
 * ```ts
 * const { filename, source } = runAsTest(events, { history, midStream: 'restart' }, 3);
 * ```
 */
export function runAsTest(events: readonly AgentEvent[], asked: DemoReplay, n: number): RunAsTest {
  const incident = recordIncident(events);
  const question = [...asked.history].reverse().find((m) => m.role === 'user')?.content ?? '';
  const short = question.length > 60 ? `${question.slice(0, 59)}…` : question;
  const source = incidentSpec(incident, {
    from: '../examples/demo/replay.js',
    chaos: '../src/chaos/index.js',
    agent: 'demoReplayAgent',
    agentArgs: [asked],
    title: `the demo's answer to ${JSON.stringify(short)} heals as it did`,
  });
  return { filename: `demo-run-${n}.spec.ts`, source, incident };
}
