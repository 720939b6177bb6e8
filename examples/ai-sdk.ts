/**
 * `npm run example:ai-sdk`: the Vercel AI SDK's `streamText` healed by rxheal, against two local
 * providers (rxheal/server; no key, no network). It imports rxheal by name, as your code would:
 * copy it into a project with rxheal, `ai`, `@ai-sdk/anthropic` and `@ai-sdk/openai-compatible`.
 *
 * - The primary (an OpenAI-compatible AI SDK provider) drops the connection mid-answer: the
 *   backup (an Anthropic AI SDK provider) continues the answer in the same stream — one answer,
 *   nothing lost or doubled.
 * - The primary answers 429 with `retry-after: 1`: rxheal waits and retries it.
 * - The primary is down: its breaker opens and, on the next question, the backup answers at once;
 *   the AI SDK's own tool loop (`tools`, `stopWhen`) runs unchanged on top.
 *
 * Each step prints the healing events and the answer.
 */
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { jsonSchema, stepCountIs, streamText, tool } from 'ai';
import { CircuitBreakerRegistry, HealHub, fallbackModel, retryWithBackoff } from 'rxheal';
import { fromAiSdk, toAiSdk } from 'rxheal/ai-sdk';
import { startLocalProvider } from 'rxheal/server';

/** Runs the three steps, printing each answer and the healing behind it. */
export async function runAiSdkExample(print: (line: string) => void = console.log): Promise<void> {
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
    const breakers = new CircuitBreakerRegistry({ failureThreshold: 2, resetTimeoutMs: 60_000 });

    // any AI SDK model; each retried (before its first token) under rxheal, then the next one
    const gpt = fromAiSdk(createOpenAICompatible({ name: 'local', baseURL: primary.openAIBaseURL, includeUsage: true })('local'), { id: 'primary' });
    const claude = fromAiSdk(createAnthropic({ baseURL: `${backup.anthropicBaseURL}/v1`, apiKey: 'local' })('local'), { id: 'backup' });
    const model = toAiSdk(
      fallbackModel([gpt, claude], {
        breakers,
        hub,
        midStream: 'continue',
        perModel: (_id, stream$, { hub, target }) => stream$.pipe(retryWithBackoff({ hub, target, maxRetries: 2, initialBackoffMs: 100 })),
      }),
    );

    const ask = async (prompt: string): Promise<void> => {
      const result = streamText({
        model,
        prompt,
        maxRetries: 0, // rxheal retries each model; the AI SDK's retry would re-run the whole chain
        tools: {
          get_weather: tool({
            description: 'Current weather for a city',
            inputSchema: jsonSchema<{ city: string; units?: string }>({
              type: 'object',
              properties: { city: { type: 'string' }, units: { type: 'string' } },
              required: ['city'],
            }),
            execute: ({ city }) => Promise.resolve({ city, temperature: 22, condition: 'sunny' }),
          }),
        },
        stopWhen: stepCountIs(3),
      });
      let text = '';
      for await (const delta of result.textStream) text += delta;
      print(`  answer    ${text} [${await result.finishReason}]`);
    };

    print('1. the primary drops the connection mid-answer');
    primary.faults.set({ kind: 'reset', afterChunks: 8, times: 1 });
    await ask('Tell me something nice about rivers');

    print('2. the primary answers 429 with retry-after: 1');
    primary.faults.set({ kind: 'status', status: 429, retryAfter: 1, times: 1 });
    await ask("What's the weather in Paris?");

    print('3. the primary is down');
    primary.faults.set({ kind: 'down' });
    await ask("What's the weather in Oslo?");
    await ask("What's the weather in Rome?");
    printing.unsubscribe();
  } finally {
    await Promise.all([primary.close(), backup.close()]);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runAiSdkExample().catch((e: unknown) => {
    console.error(e);
    process.exitCode = 1;
  });
}
