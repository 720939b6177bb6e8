/**
 * `npm run example:langchain`: a LangChain.js chain healed by rxheal, against two local providers
 * (rxheal/server; no key, no network), with LangChain's own `ChatOpenAI` as the models. It imports
 * rxheal by name, as your code would: copy it into a project with rxheal, `@langchain/core`,
 * `@langchain/openai` and `zod`.
 *
 * - A prompt → model → parser chain streams an answer; the primary drops the connection
 *   mid-answer and the backup continues it in the same stream (`withFallbacks` would only help
 *   before the first chunk, `withRetry` not at all while streaming).
 * - A tool-calling loop (`bindTools`, `ToolMessage`) while the primary answers 503: rxheal
 *   retries it, then falls back.
 */
import { HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { StringOutputParser } from '@langchain/core/output_parsers';
import { ChatPromptTemplate } from '@langchain/core/prompts';
import { tool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';
import { CircuitBreakerRegistry, HealHub, fallbackModel, retryWithBackoff } from 'rxheal';
import { fromLangChain, toLangChain } from 'rxheal/langchain';
import { startLocalProvider } from 'rxheal/server';

/** Runs the two steps, printing each answer and the healing behind it. */
export async function runLangChainExample(print: (line: string) => void = console.log): Promise<void> {
  const [primary, backup] = await Promise.all([
    startLocalProvider({ name: 'primary', tokenDelayMs: 2 }),
    startLocalProvider({ name: 'backup', tokenDelayMs: 2 }),
  ]);
  try {
    const hub = new HealHub();
    const printing = hub.events$.subscribe((e) => {
      if (e.type === 'retry') print(`  retry     ${e.target} ${e.attempt}/${e.max} in ${e.delayMs} ms (${e.category})`);
      if (e.type === 'fallback') print(`  fallback  ${e.from} → ${e.to} (${e.reason}${e.midStream ? ', mid-answer' : ''})`);
      if (e.type === 'circuit' && e.kind === 'transition') print(`  circuit   ${e.breaker} ${e.from} → ${e.to}`);
    });
    const breakers = new CircuitBreakerRegistry({ failureThreshold: 3, resetTimeoutMs: 60_000 });
    // LangChain's own retries off (maxRetries: 0): rxheal retries each model, before its first token
    const chat = (baseURL: string) => new ChatOpenAI({ model: 'local', apiKey: 'local', configuration: { baseURL }, maxRetries: 0, streamUsage: true });
    const model = toLangChain(
      fallbackModel([fromLangChain(chat(primary.openAIBaseURL), { id: 'primary' }), fromLangChain(chat(backup.openAIBaseURL), { id: 'backup' })], {
        breakers,
        hub,
        midStream: 'continue',
        perModel: (_id, stream$, { hub, target }) => stream$.pipe(retryWithBackoff({ hub, target, maxRetries: 1, initialBackoffMs: 100 })),
      }),
    );

    print('1. a chain streams; the primary drops the connection mid-answer');
    primary.faults.set({ kind: 'reset', afterChunks: 8, times: 1 });
    const chain = ChatPromptTemplate.fromMessages([['human', '{question}']])
      .pipe(model)
      .pipe(new StringOutputParser());
    let text = '';
    for await (const piece of await chain.stream({ question: 'Tell me something nice about rivers' })) text += piece;
    print(`  answer    ${text}`);

    print('2. a tool loop; the primary answers 503');
    primary.faults.set({ kind: 'status', status: 503 });
    const getWeather = tool(async ({ city }) => JSON.stringify({ city, temperature: 22, condition: 'sunny' }), {
      name: 'get_weather',
      description: 'Current weather for a city',
      schema: z.object({ city: z.string(), units: z.enum(['celsius', 'fahrenheit']).optional() }),
    });
    const withTools = model.bindTools([getWeather]);
    const history: BaseMessage[] = [new HumanMessage("What's the weather in Lisbon?")];
    for (let step = 0; step < 3; step++) {
      const reply = await withTools.invoke(history);
      history.push(reply);
      if (!reply.tool_calls?.length) {
        print(`  answer    ${String(reply.content)}`);
        break;
      }
      for (const call of reply.tool_calls) {
        print(`  tool      ${call.name}(${JSON.stringify(call.args)})`);
        history.push(new ToolMessage({ tool_call_id: call.id!, content: String(await getWeather.invoke(call.args as { city: string })) }));
      }
    }
    printing.unsubscribe();
  } finally {
    await Promise.all([primary.close(), backup.close()]);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runLangChainExample().catch((e: unknown) => {
    console.error(e);
    process.exitCode = 1;
  });
}
