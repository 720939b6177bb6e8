/**
 * One process of an agent workflow in a durable-execution engine, for spec/support/engineKills.ts:
 * the kill specs' seat booking (spec/support/seatTools.ts: two local providers behind
 * fallbackModel, three tools whose effects are lines in files) as a DBOS workflow
 * (`dbosJournal(DBOS)`, the system database in `args.dbos`) or a Restate service handler
 * (`restateJournal(ctx)`, served on `args.restate.port` for the Restate server the spec runs). Each
 * event is a JSON line (`{ event, replayed, at }`); at its kill point (a tool's effect, the nth
 * live text delta) the process prints `{ kill }` and SIGKILLs itself.
 *
 * DBOS: the first process starts the workflow (`args.start`); a later one launches DBOS, which
 * recovers the workflow its dead predecessor left pending, and waits for its end. Restate: the
 * process serves the handler; the Restate server (re)tries the invocation on it, and the process
 * exits once the handler has answered.
 *
 * Bundled by esbuild into spec/support/majors/node_modules/.cache, so that the engines' SDKs
 * resolve from spec/support/majors (Node ≥ 22).
 */
import { lastValueFrom, tap } from 'rxjs';
import { runAgent, type AgentEvent, type EffectLedger } from '../../src/index.js';
import { effectLedger } from '../../src/durable/index.js';
import type { StepJournal } from '../../src/durable/index.js';
import { dbosJournal } from '../../src/dbos/index.js';
import { restateJournal } from '../../src/restate/index.js';
import type { KillPoint, WorkerLine } from './durableAgentWorker.js';
import { DBOS_SDK, RESTATE_SDK, type Dbos, type RestateContext, type RestateSdk } from './engineSdks.js';
import { eventLine, seatModel, seatTools } from './seatTools.js';
import { storeOf, type StoreAt } from './storeAt.js';

/** The worker's one argument (JSON). */
export interface EngineWorkerArgs {
  readonly engine: 'dbos' | 'restate';
  readonly primary: string;
  readonly secondary: string;
  readonly effects: string;
  readonly kill?: KillPoint;
  /** DBOS: the workflow's id, its system database, and whether this process starts it. */
  readonly dbos?: { readonly workflowId: string; readonly url: string; readonly start: boolean };
  /** Restate: the port the handler is served on. */
  readonly restate?: { readonly port: number };
  /** An effect ledger's store (`runAgent({ effects })`): none, and a non-idempotent tool cut mid-step is verified or reported unknown by the run itself. */
  readonly ledger?: StoreAt;
}

const args = JSON.parse(process.argv[2]!) as EngineWorkerArgs;
const say = (line: WorkerLine): void => void process.stdout.write(`${JSON.stringify(line)}\n`);
const die = (): never => {
  say({ kill: args.kill!, at: Date.now() });
  process.kill(process.pid, 'SIGKILL');
  throw new Error('unreachable');
};
const tools = seatTools(args.effects, args.kill, die);
const ledger = args.ledger === undefined ? undefined : await storeOf(args.ledger);
// a short lease: a killed process's claim on a key lapses soon, and the next one waits for no more than that
const effects: EffectLedger | undefined = ledger === undefined ? undefined : effectLedger(ledger.store, { leaseMs: 1_000, pollMs: 50 });

/** The agent run of one workflow execution, its events printed: its answer, or its error (printed, then thrown). */
function answer(journal: StepJournal, runId: string): Promise<string> {
  let deltas = 0;
  let text = '';
  const run$ = runAgent({
    model: seatModel(args.primary, args.secondary),
    tools,
    instruction: 'You book seats.',
    messages: [{ role: 'user', content: 'Book seat 1A and text me.' }],
    runId,
    journal,
    ...(effects === undefined ? {} : { effects }),
  }).pipe(
    tap((e: AgentEvent) => {
      const replayed = (e as { replayed?: boolean }).replayed === true;
      if (e.type === 'message' && e.message.role === 'assistant') text = e.message.content;
      say(eventLine(e));
      if (e.type === 'text-delta' && !replayed && args.kill?.at === 'delta' && ++deltas === args.kill.n) die();
    }),
  );
  return lastValueFrom(run$).then(
    () => (say({ done: 'answer', text, at: Date.now() }), text),
    (error: unknown) => {
      const e = error as Error;
      say({ done: 'error', name: e.name, message: e.message, at: Date.now() });
      throw error;
    },
  );
}

async function dbos(o: NonNullable<EngineWorkerArgs['dbos']>): Promise<void> {
  const { DBOS } = (await import(DBOS_SDK)) as { DBOS: Dbos };
  // DBOS's own logging on stderr, its admin server off (several workers at once)
  DBOS.setConfig({ name: 'rxheal-kills', systemDatabaseUrl: o.url, runAdminServer: false, logLevel: 'warn' });
  const workflow = DBOS.registerWorkflow(() => answer(dbosJournal(DBOS), DBOS.workflowID!), { name: 'seat-agent' });
  // a pending workflow of this executor (its process killed) is recovered by launch
  await DBOS.launch();
  const handle = o.start ? await DBOS.startWorkflow(workflow, { workflowID: o.workflowId })() : DBOS.retrieveWorkflow<string>(o.workflowId);
  await handle.getResult();
  await DBOS.shutdown();
  await ledger?.close();
}

async function restate(o: NonNullable<EngineWorkerArgs['restate']>): Promise<void> {
  const sdk = (await import(RESTATE_SDK)) as RestateSdk;
  let answered: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (answered = resolve));
  const service = sdk.service({
    name: 'seatAgent',
    handlers: {
      run: async (ctx: RestateContext): Promise<string> => {
        try {
          return await answer(restateJournal(ctx), ctx.request().id);
        } finally {
          // the answer reaches the server with the handler's return; then the process ends
          setTimeout(answered, 500);
        }
      },
    },
  });
  await sdk.serve({ services: [service], port: o.port });
  await done;
  process.exit(0);
}

await (args.engine === 'dbos' ? dbos(args.dbos!) : restate(args.restate!));
