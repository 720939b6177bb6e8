/**
 * The local provider's scripted assistant: a deterministic stand-in for a model that answers
 * from the conversation alone, calls tools like a real model, and corrects itself after a tool
 * error. Pure functions, no I/O.
 *
 * @module
 */
import type { Message, ToolMessage } from '../core/events/events.js';
import { isObject as isRecord } from '../providers/sse.js';

/**
 * A tool the request offered, as the assistant sees it.
 *
 * @example
 * ```ts
 * const tool: AssistantTool = { name: 'get_weather', description: 'Current weather for a city' };
 * ```
 */
export interface AssistantTool {
  readonly name: string;
  readonly description?: string;
  /** Its JSON schema, as sent. */
  readonly parameters?: unknown;
}

/**
 * One request to the assistant, whichever protocol it came in by: the conversation as rxheal
 * {@link Message}s (system first) and the tools offered.
 *
 * @example
 * ```ts
 * const request: AssistantRequest = { protocol: 'openai', model: 'local', messages: [{ role: 'user', content: 'Hi' }], tools: [] };
 * ```
 */
export interface AssistantRequest {
  readonly protocol: 'openai' | 'anthropic' | 'responses';
  /** The `model` the request named. */
  readonly model: string;
  readonly messages: readonly Message[];
  readonly tools: readonly AssistantTool[];
}

/**
 * A tool call the assistant makes (the server gives it an id).
 *
 * @example
 * ```ts
 * const call: AssistantToolCall = { name: 'get_weather', args: { city: 'NYC', units: 'celsius' } };
 * ```
 */
export interface AssistantToolCall {
  readonly name: string;
  readonly args: unknown;
}

/**
 * What the assistant answers: text (streamed token by token), tool calls, and why it stopped
 * (default: `'tool-calls'` when there are tool calls, else `'stop'`).
 *
 * @example
 * ```ts
 * const turn: AssistantTurn = { text: 'It is 22 °C and sunny in NYC.' };
 * ```
 */
export interface AssistantTurn {
  readonly text?: string;
  readonly toolCalls?: readonly AssistantToolCall[];
  readonly finishReason?: 'stop' | 'tool-calls' | 'length';
}

/**
 * An assistant: one turn per request. Give your own to `startLocalProvider({ assistant })`.
 *
 * @example
 * ```ts
 * const echo: Assistant = (request) => ({ text: `You said: ${request.messages.at(-1)?.content}` });
 * ```
 */
export type Assistant = (request: AssistantRequest) => AssistantTurn;

/**
 * Splits text into the tokens the server streams: each word with its leading whitespace
 * (joined back, they give the text exactly).
 *
 * @example
 * ```ts
 * tokenize('It is 22 °C.'); // ['It', ' is', ' 22', ' °C.']
 * ```
 */
export function tokenize(text: string): string[] {
  // linear, though the linter cannot tell: where `\s*\S+` fails only whitespace is left, and `\s+$` takes it at once
  // eslint-disable-next-line regexp/no-super-linear-move
  return text.match(/\s*\S+|\s+$/g) ?? [];
}

const CONTINUE = /\b(continue it exactly where it stopped|was cut off|continue where you (left off|stopped))\b/i;
const WEATHER = /\b(weather|temperature|forecast|rain(ing|y)?|sunny|snow(ing)?|hot|cold|degrees?)\b/i;
const STORY = /\b(story|stories|at length|in detail|long answer)\b/i;
/**
 * The scripted assistant's long plain answer (no tool call, 90 tokens) to a request for a story:
 * long enough for a provider to die visibly mid-answer.
 *
 * @example
 * ```ts
 * const messages: Message[] = [{ role: 'user', content: 'Tell me a story about a river' }];
 * scriptedAssistant({ protocol: 'openai', model: 'local', messages, tools: [] }).text === RIVER_STORY; // true
 * ```
 */
export const RIVER_STORY =
  'Once upon a time, a small river began as snowmelt high in the mountains. It ran over stones and under old bridges, ' +
  'past a mill that had stopped turning long ago, and through a town where children raced paper boats along its banks. ' +
  'In summer it grew slow and warm; in spring it ran fast and loud with rain. Herons fished in its shallows at dawn, ' +
  'and at night it carried the lights of the houses on its surface all the way down to the sea, where it finally rested.';
const KNOWLEDGE = /\b(polic(y|ies)|refunds?|returns?|docs?|documentation|manual|knowledge|guide|faq|how (do|can|to) )/i;
/** Times a tool may fail in a row (since the question) before the assistant gives up on it. */
const MAX_ATTEMPTS = 3;

/**
 * The city a weather question names ("…in Paris?", "…for new york"), else `'NYC'`.
 *
 * @example
 * ```ts
 * cityOf("What's the weather in Paris?"); // 'Paris'
 * cityOf('Temperature in Austin in Fahrenheit?'); // 'Austin'
 * ```
 */
export function cityOf(question: string): string {
  const city = cityPhrase(question);
  if (city === undefined) return 'NYC';
  // "in Austin in Fahrenheit", "for Oslo right now": the city ends where another phrase starts
  let end = city.length;
  for (let k = 0; k < city.length; k++) {
    if (!isSpace(city, k)) continue;
    let m = k;
    while (m < city.length && isSpace(city, m)) m++;
    if (PHRASE_STARTS.some((w) => wordAt(city, m, w, false))) {
      end = k;
      break;
    }
    k = m - 1;
  }
  const trimmed = city.slice(0, end).trim();
  return trimmed !== '' ? trimmed : 'NYC';
}

// cityOf scans by hand, once: the regex it replaces (`\b(?:in|for|at)\s+([\p{L}][\p{L} .'-]*?)\s*(?:[?!.,;]|…|$)`)
// backtracked quadratically on long runs of spaces in a question.
const LEADS = ['in', 'for', 'at'];
const ENDS = ['today', 'tomorrow', 'now'];
const PHRASE_STARTS = ['in', 'for', 'at', 'on', 'right', 'today', 'tomorrow', 'now', 'please', 'fahrenheit', 'celsius'];
const SPACE_CHAR = /\s/;
const LETTER = /\p{L}/u;
const CITY_CHAR = /[\p{L} .'-]/u;
const ASCII_WORD = /[A-Za-z0-9_]/;
const isSpace = (text: string, i: number): boolean => i < text.length && SPACE_CHAR.test(text.charAt(i));
const isWordChar = (text: string, i: number): boolean => i >= 0 && i < text.length && ASCII_WORD.test(text.charAt(i));
/** `word` (any case) at `i`, not followed by a word character, and (with `before`) not preceded by one. */
const wordAt = (text: string, i: number, word: string, before: boolean): boolean =>
  text.slice(i, i + word.length).toLowerCase() === word && !isWordChar(text, i + word.length) && !(before && isWordChar(text, i - 1));

/** The first "in|for|at <letters…>" phrase, up to a punctuation mark, today/tomorrow/now or the end: linear. */
function cityPhrase(q: string): string | undefined {
  const n = q.length;
  // the index after the run of whitespace starting at i (what `\s*` would take)
  const skip = new Int32Array(n + 1);
  skip[n] = n;
  for (let i = n - 1; i >= 0; i--) skip[i] = isSpace(q, i) ? skip[i + 1]! : i;
  const endsAt = (k: number): boolean => k === n || '?!.,;'.includes(q.charAt(k)) || ENDS.some((w) => wordAt(q, k, w, true));
  let i = 0;
  while (i < n) {
    const lead = isWordChar(q, i - 1) ? undefined : LEADS.find((w) => q.slice(i, i + w.length).toLowerCase() === w);
    const spaced = lead !== undefined && isSpace(q, i + lead.length);
    const s = spaced ? skip[i + lead.length]! : n;
    if (s >= n || !LETTER.test(q.charAt(s))) {
      i++;
      continue;
    }
    let j = s + 1;
    while (!endsAt(skip[j]!) && j < n && CITY_CHAR.test(q.charAt(j))) j++;
    if (endsAt(skip[j]!)) return q.slice(s, j);
    // every later start before j walks into the same character and fails there too, but for a
    // lead right before the whitespace that ends at j (its \s+ may reach past j): start again there
    let r = j;
    while (r > i && isSpace(q, r - 1)) r--;
    i = Math.max(i + 1, r - 3);
  }
  return undefined;
}

/** Tools the system prompt says are unavailable (`CapabilityRegistry.systemPromptSuffix`'s list). */
function unavailableTools(messages: readonly Message[]): Set<string> {
  const out = new Set<string>();
  for (const m of messages) {
    if (m.role !== 'system') continue;
    const at = m.content.search(/unavailable right now:/i);
    if (at === -1) continue;
    for (const line of m.content.slice(at).split('\n')) {
      const name = /^\s*-\s*([\w.-]+)\s*:/.exec(line)?.[1];
      if (name !== undefined) out.add(name);
    }
  }
  return out;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

const clip = (text: string, max: number): string => (text.length > max ? text.slice(0, max - 1) + '…' : text);

function weatherArgs(question: string): { city: string; units: string } {
  return { city: cityOf(question), units: /fahrenheit|°\s?f\b/i.test(question) ? 'fahrenheit' : 'celsius' };
}

/** Arguments for another try after a failed call: the same intent, valid values. */
function corrected(name: string, previous: unknown, question: string): unknown {
  const prev = isRecord(previous) ? previous : {};
  if (name === 'get_weather') {
    const wanted = weatherArgs(question);
    return {
      city: typeof prev['city'] === 'string' && prev['city'] !== '' ? prev['city'] : wanted.city,
      units: prev['units'] === 'fahrenheit' ? 'fahrenheit' : 'celsius',
    };
  }
  if (name === 'knowledge_search') return { query: typeof prev['query'] === 'string' && prev['query'] !== '' ? prev['query'] : question };
  return prev;
}

function isFailure(message: ToolMessage): boolean {
  return message.isError === true || /^error\b|\bfailed with\b|\bhas failed\b/i.test(message.content);
}

function weatherAnswer(content: string, args: unknown): string {
  const result = parseJson(content);
  const a = isRecord(args) ? args : {};
  if (!isRecord(result)) return `The weather service says: ${clip(content, 200)}`;
  const city = typeof result['city'] === 'string' ? result['city'] : typeof a['city'] === 'string' ? a['city'] : 'the city';
  const units = typeof result['units'] === 'string' ? result['units'] : a['units'];
  const temperature = result['temperature'] ?? result['temp'];
  const condition = typeof result['condition'] === 'string' ? ` and ${result['condition']}` : '';
  if (typeof temperature !== 'number' && typeof temperature !== 'string') return `The weather in ${city}: ${clip(content, 200)}`;
  return `It is ${temperature} ${units === 'fahrenheit' ? '°F' : '°C'}${condition} in ${city}.`;
}

function knowledgeAnswer(content: string): string {
  if (/^\s*"?unavailable"?\s*$|\bunavailable\b|\bno results?\b/i.test(content)) {
    return "I couldn't search the knowledge base right now, so I can't look that up. Please try again later.";
  }
  const result = parseJson(content);
  const text =
    typeof result === 'string' ? result : Array.isArray(result) ? result.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('; ') : content;
  return `According to the knowledge base: ${clip(text, 300)}`;
}

/**
 * The default assistant, deterministic:
 * - a weather question ("weather", "temperature", "forecast"…) with a `get_weather` tool
 *   offered → calls `get_weather({ city, units: 'celsius' })` (city from "in/for/at <city>",
 *   default `'NYC'`; `'fahrenheit'` if asked); given the result `{ temperature, condition, city? }`
 *   → "It is 22 °C and sunny in NYC.";
 * - a knowledge question ("policy", "refund", "docs", "how do I"…) with `knowledge_search`
 *   offered → calls `knowledge_search({ query: <the question> })`, then answers "According to
 *   the knowledge base: …" (or says it could not search, for a result like `'unavailable'`);
 * - a failed tool (an error result, or a reflection prompt) → calls it again with corrected
 *   arguments, up to 3 failures in a row; after that, or when told not to call it again, says the
 *   tool is not working;
 * - a tool the system prompt lists as unavailable (a degraded capability) is not called: it says
 *   so instead;
 * - asked for a story ("story", "at length", "in detail", "long answer") → a long plain answer
 *   ({@link RIVER_STORY}, about 90 tokens, no tool): what a reset mid-answer visibly cuts;
 * - asked to continue a cut-off answer (an assistant message with the partial text, then a user
 *   message such as fallbackModel's continue instruction) → the rest of the answer it would have
 *   given, after the partial text;
 * - anything else → a canned answer that quotes the question.
 *
 * @example
 * ```ts
 * const messages: Message[] = [{ role: 'user', content: "What's the weather in Paris?" }];
 * scriptedAssistant({ protocol: 'openai', model: 'local', messages, tools: [{ name: 'get_weather' }] });
 * // { toolCalls: [{ name: 'get_weather', args: { city: 'Paris', units: 'celsius' } }] }
 * ```
 */
export const scriptedAssistant: Assistant = (request) => {
  const { messages } = request;
  // asked to continue a cut-off answer (fallbackModel's 'continue'): answer the conversation
  // before it, and send only what comes after the partial text
  const last = messages[messages.length - 1];
  const partial = messages[messages.length - 2];
  if (last?.role === 'user' && CONTINUE.test(last.content) && partial?.role === 'assistant' && !partial.toolCalls?.length) {
    const whole = scriptedAssistant({ ...request, messages: messages.slice(0, -2) });
    if (whole.text !== undefined && whole.text.startsWith(partial.content)) return { text: whole.text.slice(partial.content.length) };
    return whole;
  }
  let questionAt = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]?.role === 'user') {
      questionAt = i;
      break;
    }
  }
  const question = questionAt === -1 ? '' : (messages[questionAt]?.content ?? '');
  const since = messages.slice(questionAt + 1);
  const unavailable = unavailableTools(messages);
  const offered = (name: string): boolean => request.tools.some((t) => t.name === name);
  const usable = (name: string): boolean => offered(name) && !unavailable.has(name);

  // answering after tool results: the trailing tool messages are this turn's input
  const results: ToolMessage[] = [];
  for (let i = messages.length - 1; i > questionAt; i--) {
    const m = messages[i];
    if (m?.role !== 'tool') break;
    results.unshift(m);
  }
  if (results.length > 0) {
    const argsOf = (callId: string): unknown => {
      for (const m of since) if (m.role === 'assistant') for (const c of m.toolCalls ?? []) if (c.id === callId) return c.args;
      return undefined;
    };
    const retries: AssistantToolCall[] = [];
    const sentences: string[] = [];
    for (const result of results) {
      if (!isFailure(result)) {
        if (result.toolName === 'get_weather') sentences.push(weatherAnswer(result.content, argsOf(result.toolCallId)));
        else if (result.toolName === 'knowledge_search') sentences.push(knowledgeAnswer(result.content));
        else sentences.push(`The ${result.toolName} tool returned: ${clip(result.content, 300)}`);
        continue;
      }
      const failures = since.filter((m): m is ToolMessage => m.role === 'tool' && m.toolName === result.toolName && isFailure(m)).length;
      if (failures >= MAX_ATTEMPTS || /do not call it again|unavailable/i.test(result.content) || !usable(result.toolName)) {
        sentences.push(`Sorry, the ${result.toolName} tool is not working right now, so I can't answer that part.`);
      } else {
        retries.push({ name: result.toolName, args: corrected(result.toolName, argsOf(result.toolCallId), question) });
      }
    }
    if (retries.length > 0) return { toolCalls: retries };
    return { text: sentences.join(' ') };
  }

  if (STORY.test(question)) return { text: RIVER_STORY };
  if (WEATHER.test(question)) {
    if (usable('get_weather')) return { toolCalls: [{ name: 'get_weather', args: weatherArgs(question) }] };
    const city = cityOf(question);
    return {
      text: offered('get_weather')
        ? `The weather service is unavailable right now, so I can't check the weather in ${city}. Please try again later.`
        : `I can't check the weather in ${city}: I have no weather tool.`,
    };
  }
  if (KNOWLEDGE.test(question)) {
    if (usable('knowledge_search')) return { toolCalls: [{ name: 'knowledge_search', args: { query: question } }] };
    return { text: "I can't search the knowledge base right now, so I can't look that up. Please try again later." };
  }
  const quoted = clip(question.replace(/\s+/g, ' ').trim(), 120);
  return {
    text:
      `I am the local rxheal assistant. You said: "${quoted}". Ask me about the ` +
      `weather in a city, or about the refund policy, and I will use a tool to answer.`,
  };
};
