/**
 * One process of the AI SDK route inside an engine, for spec/restate/aiSdk.spec.ts and
 * spec/dbos/aiSdk.spec.ts: what a user of the engines' AI SDK integrations writes, with rxheal's
 * healing chain as the model (`toAiSdk(fallbackModel([...]))`: spec/support/seatTools.ts's over two
 * local providers) and the seat booking's three tools, each tool's effect in a step of the engine:
 *
 * - Restate (`@restatedev/vercel-ai-middleware`): `generateText` on `wrapLanguageModel({ model,
 *   middleware: durableCalls(ctx, opts) })` in a service handler served on `args.port` (the
 *   middleware wraps `doGenerate` alone);
 * - DBOS (`@dbos-inc/vercel-ai`): `streamText` on `wrapLanguageModel({ model, middleware:
 *   durableCalls(opts) })` in a workflow (the first process starts it; a later one launches DBOS,
 *   which recovers it, and waits for its end).
 *
 * Each model call that runs (not one the engine answers from its journal) prints `{ step, at }`;
 * each tool's effect `{ effect }`; `{ kill }` and a SIGKILL `args.killAfterMs` after the
 * `args.killAtStep`-th model call of this process starts. The process exits once the run has
 * answered (`{ done: 'answer' }`), after a failure with `exitOnError`, or after `lifeMs`.
 *
 * Bundled by esbuild into spec/support/majors/node_modules/.cache, where `ai` (7), the
 * integrations and the engines' SDKs resolve from spec/support/majors (Node ≥ 22).
 */
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { toAiSdk } from '../../src/ai-sdk/index.js';
import { DBOS_SDK, RESTATE_SDK, type Dbos, type RestateContext, type RestateSdk } from './engineSdks.js';
import { seatModel } from './seatTools.js';

/** The worker's one argument (JSON). */
export interface AiSdkWorkerArgs {
  readonly engine: 'dbos' | 'restate';
  readonly primary: string;
  readonly secondary: string;
  readonly effects: string;
  /** Restate: the port the handler is served on. */
  readonly port?: number;
  /** DBOS: the workflow's id, its system database, and whether this process starts it. */
  readonly dbos?: { readonly workflowId: string; readonly url: string; readonly start: boolean };
  /** The middleware's options (Restate's RunOptions, DBOS's step options); none: its defaults. */
  readonly middleware?: Record<string, unknown>;
  readonly killAtStep?: number;
  readonly killAfterMs?: number;
  /** Exit (0) half a second after the run failed (else the process stays, for the engine's retries). */
  readonly exitOnError?: boolean;
  /** Exit (0) this long after starting, whatever the run does. */
  readonly lifeMs?: number;
}

/** A line the worker prints. */
export type AiSdkWorkerLine =
  | { readonly step: string; readonly at: number }
  | { readonly effect: string; readonly at: number }
  | { readonly kill: number; readonly at: number }
  | { readonly done: 'answer'; readonly text: string; readonly at: number }
  | { readonly done: 'error'; readonly name: string; readonly message: string; readonly at: number };

const args = JSON.parse(process.argv[2]!) as AiSdkWorkerArgs;
const say = (line: AiSdkWorkerLine): void => void process.stdout.write(`${JSON.stringify(line)}\n`);

/** What the worker calls of the packages of spec/support/majors (typed here, not the project's). */
interface Ai {
  generateText(options: Record<string, unknown>): Promise<{ text: string }>;
  streamText(options: Record<string, unknown>): { text: Promise<string>; consumeStream(): Promise<void> };
  wrapLanguageModel(options: { model: unknown; middleware: unknown }): unknown;
  tool(definition: Record<string, unknown>): unknown;
  jsonSchema(schema: object): unknown;
  stepCountIs(n: number): unknown;
}
// imported by name at run time: resolved from spec/support/majors, where the bundle is
const load = <T>(name: string): Promise<T> => import(name) as Promise<T>;
const ai = await load<Ai>('ai');

let steps = 0;
/** The model, each call of it printed (and the process killed where planned): a call the engine answers from its journal never reaches it. */
function counted(model: ReturnType<typeof toAiSdk>) {
  const step = (): void => {
    say({ step: `${model.provider}.${model.modelId}`, at: Date.now() });
    if (++steps === args.killAtStep)
      setTimeout(() => {
        say({ kill: steps, at: Date.now() });
        process.kill(process.pid, 'SIGKILL');
      }, args.killAfterMs ?? 0);
  };
  return {
    specificationVersion: model.specificationVersion,
    provider: model.provider,
    modelId: model.modelId,
    supportedUrls: model.supportedUrls,
    doGenerate: (options: Parameters<typeof model.doGenerate>[0]) => (step(), model.doGenerate(options)),
    doStream: (options: Parameters<typeof model.doStream>[0]) => (step(), model.doStream(options)),
  };
}

/** The three tools, each effect a line in a file, in a step of the engine (`inStep`). */
function tools(inStep: <T>(name: string, fn: () => Promise<T>) => PromiseLike<T>) {
  const schema = (key: string) => ai.jsonSchema({ type: 'object', properties: { [key]: { type: 'string' } }, required: [key] });
  const tool = (name: string, key: string) =>
    ai.tool({
      description: name,
      inputSchema: schema(key),
      execute: (a: unknown) =>
        inStep(name, async () => {
          appendFileSync(join(args.effects, `${name}.log`), `${JSON.stringify(a)} ${Date.now()}\n`);
          say({ effect: name, at: Date.now() });
          return { ok: true, tool: name };
        }),
    });
  return { lookup: tool('lookup', 'seat'), book: tool('book', 'seat'), notify: tool('notify', 'text') };
}

/** The run's end, printed; the process ended after it as `args` says. */
async function ended(run: Promise<string>): Promise<string> {
  try {
    const text = await run;
    say({ done: 'answer', text, at: Date.now() });
    // the answer reaches the engine first
    setTimeout(() => process.exit(0), 500);
    return text;
  } catch (error) {
    const e = error as Error;
    say({ done: 'error', name: e.name, message: e.message, at: Date.now() });
    if (args.exitOnError) setTimeout(() => process.exit(0), 500);
    throw error;
  }
}

const options = {
  prompt: 'Book seat 1A and text me.',
  // rxheal retries inside the model; the AI SDK's own retry would be a layer more
  maxRetries: 0,
  stopWhen: ai.stepCountIs(6),
};
const model = () => counted(toAiSdk(seatModel(args.primary, args.secondary)));

if (args.lifeMs !== undefined) setTimeout(() => process.exit(0), args.lifeMs);

if (args.engine === 'restate') {
  const [sdk, { durableCalls }] = await Promise.all([
    load<RestateSdk>(RESTATE_SDK),
    load<{ durableCalls(ctx: RestateContext, options?: object): unknown }>('@restatedev/vercel-ai-middleware'),
  ]);
  const service = sdk.service({
    name: 'seatChat',
    handlers: {
      run: (ctx: RestateContext) =>
        ended(
          ai
            .generateText({
              ...options,
              model: ai.wrapLanguageModel({ model: model(), middleware: durableCalls(ctx, args.middleware) }),
              tools: tools((name, fn) => ctx.run(name, fn)),
            })
            .then((r) => r.text),
        ),
    },
  });
  await sdk.serve({ services: [service], port: args.port! });
} else {
  const o = args.dbos!;
  const [{ DBOS }, { durableCalls }] = await Promise.all([
    load<{ DBOS: Dbos }>(DBOS_SDK),
    load<{ durableCalls(options?: object): unknown }>('@dbos-inc/vercel-ai'),
  ]);
  DBOS.setConfig({ name: 'rxheal-ai-sdk', systemDatabaseUrl: o.url, runAdminServer: false, logLevel: 'warn' });
  const workflow = DBOS.registerWorkflow(
    () => {
      const result = ai.streamText({
        ...options,
        model: ai.wrapLanguageModel({ model: model(), middleware: durableCalls(args.middleware) }),
        tools: tools((name, fn) => DBOS.runStep(fn, { name })),
      });
      return ended(result.text);
    },
    { name: 'seat-chat' },
  );
  await DBOS.launch();
  const handle = o.start ? await DBOS.startWorkflow(workflow, { workflowID: o.workflowId })() : DBOS.retrieveWorkflow<string>(o.workflowId);
  await handle.getResult().catch(() => undefined);
  await DBOS.shutdown();
}
