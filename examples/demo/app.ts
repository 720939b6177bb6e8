/**
 * The chat page: streamed answers with what healed them marked in the conversation itself
 * (retries, fallbacks, continuations, reflections, degraded capabilities — each marker linked to
 * its line in the healing log), per-provider and per-tool circuits with the countdown to the
 * next probe, a running summary, a toggle for every fault of the local providers (read back from
 * them on load), and suggestion chips that each show one healing path. Runs in the browser;
 * bundled by the demo server with esbuild.
 */
import { snapshotBreaker } from '../../src/fleet/index.js';
import { summarize, type AgentEvent, type CircuitBreaker, type HealEvent, type Message, type ResilienceSummary } from '../../src/index.js';
import { createDemoAgent, DEMO, MCP_BREAKER, type McpConfig, type ProviderConfig } from './agent.js';
import type { DemoReplay } from './replay.js';
import { MARKS } from './marks.js';
import { runAsTest } from './runAsTest.js';

interface PageConfig {
  readonly providers: readonly ProviderConfig[];
  readonly mcp: McpConfig;
}

const $ = <T extends HTMLElement>(selector: string): T => {
  const element = document.querySelector<T>(selector);
  if (!element) throw new Error(`missing ${selector}`);
  return element;
};

const el = (tag: string, className?: string, text?: string): HTMLElement => {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
};

function showPageError(message: string): void {
  const banner = $('#page-error');
  banner.hidden = false;
  banner.textContent = `Unexpected error: ${message}`;
}
window.addEventListener('error', (e) => showPageError(e.message));
window.addEventListener('unhandledrejection', (e) => showPageError(String(e.reason)));

/** A fault toggle per local provider: its label, what it does (the log says it in these words), the fault posted to /admin/faults (id `toggle-<id>`). */
interface Toggle {
  readonly id: string;
  readonly label: string;
  readonly title: string;
  readonly fault: Readonly<Record<string, unknown>>;
}
const TOGGLES: readonly Toggle[] = [
  { id: 'off', label: 'down', title: 'refuses connections', fault: { kind: 'down' } },
  { id: '429', label: '429 + retry-after 1 s', title: 'rate-limited: 429 asking for a 1 s wait', fault: { kind: 'status', status: 429, retryAfter: 1 } },
  { id: '500', label: '500', title: 'HTTP 500', fault: { kind: 'status', status: 500 } },
  { id: '503', label: '503', title: 'HTTP 503', fault: { kind: 'status', status: 503 } },
  { id: 'no-retry', label: '503 no-retry', title: '503 with x-should-retry: false', fault: { kind: 'status', status: 503, shouldRetry: false } },
  { id: 'reset', label: 'reset after 3 chunks', title: 'drops the connection after 3 chunks of the answer', fault: { kind: 'reset', afterChunks: 3 } },
  { id: 'stall', label: 'stall', title: 'sends headers and 2 chunks, then silence', fault: { kind: 'stall', afterChunks: 2 } },
  { id: 'slow', label: 'slow first byte', title: 'answers after 3 s', fault: { kind: 'slow-first-byte', delayMs: 3000 } },
  { id: 'malformed', label: 'malformed chunk', title: 'sends one chunk of broken JSON', fault: { kind: 'malformed', afterChunks: 2 } },
  { id: 'bad-args', label: 'bad tool args (once)', title: 'asks get_weather for units: "kelvin", once', fault: { kind: 'bad-tool-args', times: 1 } },
  { id: 'verbose', label: 'long answers', title: 'says its answer 12 times over (the question’s cent runs out)', fault: { kind: 'verbose', repeat: 12 } },
];

/**
 * Suggestion chips: each asks a question that shows one healing path, arming (for that one
 * question) the fault that triggers it on the local provider that will answer.
 */
interface Chip {
  readonly id: string;
  readonly label: string;
  readonly question: string;
  /** A toggle to arm once (`times: 1`), or the slow knowledge search. */
  readonly arm: { readonly toggle: string } | 'slow-search';
}
const CHIPS: readonly Chip[] = [
  { id: 'long', label: 'Long answer · provider dies mid-answer', question: 'Tell me a story about a river', arm: { toggle: 'reset' } },
  { id: 'weather', label: 'Weather · bad tool arguments', question: "What's the weather in Paris?", arm: { toggle: 'bad-args' } },
  { id: 'refund', label: 'Refund policy · slow search', question: 'What is the refund policy?', arm: 'slow-search' },
  { id: 'hedge', label: 'Slow first token · hedged', question: 'Tell me about hedged requests', arm: { toggle: 'slow' } },
];

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/** The error text of a reflection prompt (quoted as JSON by the default template), unescaped. */
function errorOfPrompt(prompt: string): string {
  const start = prompt.indexOf('failed with: "');
  const end = prompt.lastIndexOf('". ');
  if (start === -1 || end <= start) return prompt;
  try {
    return JSON.parse(prompt.slice(start + 'failed with: '.length, end + 1)) as string;
  } catch {
    return prompt;
  }
}

/**
 * "Download this run as a test" under an answer: the spec that replays it in virtual time (a
 * link to a file). A run the incident cannot be read from says why instead.
 */
function offerAsTest(bubble: HTMLElement, events: readonly AgentEvent[], asked: DemoReplay, n: number): void {
  const item = el('div', 'as-test');
  try {
    const { filename, source } = runAsTest(events, asked, n);
    const link = el('a', '', 'Download this run as a test') as HTMLAnchorElement;
    link.download = filename;
    link.href = URL.createObjectURL(new Blob([source], { type: 'text/typescript' }));
    link.title = `${filename}: put it in spec/ and npm test replays this answer's faults in virtual time`;
    item.append(link);
  } catch (error) {
    item.textContent = `This run cannot be replayed as a test: ${error instanceof Error ? error.message : String(error)}`;
  }
  bubble.append(item);
}

async function main(): Promise<void> {
  const config = (await (await fetch('/config.json')).json()) as PageConfig;
  const agent = createDemoAgent(config.providers, config.mcp);
  (window as unknown as { rxhealDemo: unknown }).rxhealDemo = agent;
  const history: Message[] = [];
  const log = $('#log');
  const chat = $('#chat');
  const locals = config.providers.filter((p) => p.admin !== undefined);

  // ---- the healing log: every line has an id the conversation's markers link to ---------------
  let lines = 0;
  /** The log line of each hub event: the run passes most of the hub's own event objects on, others arrive as equal copies. */
  const lineOf = new WeakMap<object, HTMLElement>();
  const lineOfCopy = new Map<string, HTMLElement>();
  const logLineOf = (event: object): HTMLElement | undefined => lineOf.get(event) ?? lineOfCopy.get(JSON.stringify(event));
  /** Markers whose event reached the run before the hub (a capability's): linked once the line exists. */
  const unlinked = new Map<string, (line: HTMLElement) => void>();
  const note = (kind: string, text: string): HTMLElement => {
    const line = el('li', `note ${kind}`);
    line.id = `log-${++lines}`;
    line.append(el('time', '', new Date().toLocaleTimeString()), el('span', 'text', text));
    log.prepend(line);
    return line;
  };
  const flash = (line: HTMLElement): void => {
    line.scrollIntoView({ block: 'nearest' });
    line.classList.remove('flash');
    void line.offsetWidth; // restart the animation
    line.classList.add('flash');
  };

  // ---- circuits: state and countdown, read from the breakers whenever drawn ----------------
  const names = [...config.providers.map((p) => `model:${p.id}`), MCP_BREAKER, 'tool:get_weather', 'tool:knowledge_search'];
  const circuits = $('#circuits');
  const rows = new Map<string, HTMLElement>();
  for (const name of names) {
    const row = el('li', 'circuit');
    row.dataset['breaker'] = name;
    row.append(el('span', 'name', name), el('span', 'state'), el('span', 'countdown'));
    circuits.append(row);
    rows.set(name, row);
  }

  // ---- the summary (summarize over the hub); running periods keep counting between events -------
  const summary = $<HTMLTableElement>('#summary');
  const summaryPanel = $('.panel-summary');
  const summaryMore = $('#summary-more');
  let latest: ResilienceSummary | undefined;
  const pct = (x: number | null): string => (x === null ? '—' : `${Math.round(x * 100)} %`);
  /** The hint at the bottom of a summary taller than its panel: how many rows are (partly) out of view, the ones under it included. */
  const hintSummary = (): void => {
    const below = (edge: number): number => [...summary.rows].filter((row) => row.getBoundingClientRect().bottom > edge + 0.5).length;
    summaryMore.hidden = below(summaryPanel.getBoundingClientRect().bottom) === 0;
    if (summaryMore.hidden) return;
    const hidden = below(summaryMore.getBoundingClientRect().top);
    summaryMore.textContent = `↓ ${hidden} more ${hidden === 1 ? 'row' : 'rows'}: scroll`;
  };
  summaryPanel.addEventListener('scroll', hintSummary, { passive: true });
  const renderSummary = (): void => {
    const s = latest;
    if (s === undefined) return;
    const running = Math.max(0, Date.now() - s.at);
    // an open circuit skipped is not a fallback call (the circuit's row counts it as rejected)
    const fallbacks = s.fallbacks.total - (s.fallbacks.byReason['circuit_open'] ?? 0);
    const table: [string, string, string?][] = [
      ['model calls / tool calls', `${s.calls.model} / ${s.calls.tool}`],
      ['retries (succeeded)', `${s.retries.total} (${s.retries.succeeded})`],
      ['fallbacks per model call', `${fallbacks} (${pct(s.calls.model === 0 ? null : fallbacks / s.calls.model)})`],
      ['reflections', String(s.reflections.total)],
      ...Object.entries(s.circuits)
        .filter(([, c]) => c.opened > 0)
        .map(([name, c]): [string, string, string] => [
          `${name} opened`,
          `${c.opened}× · open ${seconds(c.openMs + (c.openSince === undefined ? 0 : running))} · ${c.rejected} rejected`,
          `circuit:${name}`,
        ]),
      ...Object.entries(s.capabilities).map(([name, c]): [string, string, string] => [
        `${name} degraded`,
        `${c.degraded}× · ${seconds(c.degradedMs + (c.degradedSince === undefined ? 0 : running))}`,
        `capability:${name}`,
      ]),
    ];
    summary.replaceChildren(
      ...table.map(([k, v, key]) => {
        const row = el('tr');
        if (key !== undefined) row.dataset['summary'] = key;
        row.append(el('th', '', k), el('td', '', v));
        return row;
      }),
    );
    hintSummary();
  };
  summarize(agent.hub.events$).subscribe((s) => {
    latest = s;
    renderSummary();
  });

  const draw = (): void => {
    for (const [name, row] of rows) {
      const breaker: CircuitBreaker = agent.breakers.get(name);
      const state = breaker.state;
      row.dataset['state'] = state;
      row.querySelector('.state')!.textContent = state;
      const snap = snapshotBreaker(breaker);
      const left = snap.openUntil === null ? 0 : Math.max(0, snap.openUntil - Date.now());
      row.querySelector('.countdown')!.textContent = state === 'open' ? `probe in ${seconds(left)}` : '';
    }
    const degraded = agent.capabilities.degraded();
    const banner = $('#degraded');
    banner.hidden = degraded.size === 0;
    banner.textContent = [...degraded].map(([c, reason]) => `⚠ ${c} unavailable: ${reason} — the agent answers without it`).join(' · ');
    for (const retry of document.querySelectorAll<HTMLElement>('[data-retry-at]')) {
      const left = Number(retry.dataset['retryAt']) - Date.now();
      retry.querySelector('.countdown')!.textContent = left > 0 ? ` — retrying in ${seconds(left)}` : ' — retried';
    }
    renderSummary();
  };
  setInterval(draw, 200);

  /** The last error of each tool, as the model saw it (a reflection's log line quotes it readably). */
  const toolErrors = new Map<string, string>();
  const reflectionText = (e: Extract<HealEvent, { type: 'reflection' }>): string =>
    `reflection on ${e.tool} (${e.attempt}/${e.max}): ${toolErrors.get(e.tool) ?? errorOfPrompt(e.prompt)}${e.exhausted ? ' — told to stop calling it' : ' — asked the model to correct its arguments'}`;

  /** What a hedge event says, in the log and under the answer (attempt 0 is the first request). */
  const hedgeText = (e: Extract<HealEvent, { type: 'hedge' }>): string => {
    const which = e.attempt === 0 ? 'the first request' : `hedge ${e.attempt}`;
    switch (e.kind) {
      case 'started':
        return `${e.target}: no first token after ${e.afterMs ?? '?'} ms — hedge ${e.attempt} sent`;
      case 'won':
        return `${e.target}: ${which} answered first${e.attempt === 0 ? '' : ', the other request aborted'}`;
      case 'cancelled':
        return `${e.target}: ${which} cancelled (another answered first)`;
      case 'failed':
        return `${e.target}: ${which} failed (${e.category ?? 'error'}) while another ran`;
      case 'skipped':
        return `${e.target}: hedge skipped (circuit open)`;
      case 'denied':
        return `${e.target}: hedge not sent (hedge budget spent)`;
    }
  };

  agent.hub.events$.subscribe((e) => {
    let line: HTMLElement | undefined;
    switch (e.type) {
      case 'retry': {
        line = note('retry', `${e.target}: ${e.category}, retry ${e.attempt}/${e.max} after ${e.delayMs} ms`);
        line.dataset['retryAt'] = String(Date.now() + e.delayMs);
        line.append(el('span', 'countdown'));
        break;
      }
      case 'retry-succeeded':
        line = note('ok', `${e.target}: attempt ${e.attempt} succeeded`);
        break;
      case 'circuit':
        line =
          e.kind === 'transition'
            ? note(`breaker-${e.to}`, `circuit ${e.breaker}: ${e.from} → ${e.to} (${e.reason})`)
            : note('breaker-open', `circuit ${e.breaker} is open: call rejected without reaching it`);
        break;
      case 'fallback':
        // an open circuit skipped is not a fallback call: said as the marker says it
        line = note(
          'fallback',
          e.reason === 'circuit_open'
            ? `${e.from} skipped (circuit open) → ${e.to}`
            : `fallback ${e.from} → ${e.to} (${e.reason}${e.midStream ? ', mid-answer' : ''})`,
        );
        break;
      case 'resume':
        line = note('resume', `${e.target}: stream ${e.reason}, resumed ${e.responseId} after event ${e.startingAfter} (${e.attempt}/${e.max})`);
        break;
      case 'reflection':
        line = note('reflection', reflectionText(e));
        break;
      case 'degraded':
        line = note('degradation', `${e.capability} degraded: ${e.reason}`);
        break;
      case 'restored':
        line = note('ok', `${e.capability} restored`);
        break;
      case 'budget-exceeded':
        line =
          e.resource === 'usd'
            ? note(
                'error',
                `budget: $${e.used.toFixed(4)} would pass the question's $${e.limit.toFixed(2)} — ${e.cut ? 'answer cut here, kept' : 'call refused'}`,
              )
            : note('error', `budget exceeded: ${e.resource} ${e.used}/${e.limit}`);
        break;
      case 'spend':
        line = note('ok', `${e.model}: $${e.usd.toFixed(4)}${e.estimated ? ' (estimated)' : ''} — this question so far $${e.totalUsd.toFixed(4)}`);
        break;
      case 'hedge':
        line = note('hedge', hedgeText(e));
        break;
      default:
        break;
    }
    if (line !== undefined) {
      const key = JSON.stringify(e);
      lineOf.set(e, line);
      lineOfCopy.set(key, line);
      if (lineOfCopy.size > 500) lineOfCopy.delete(lineOfCopy.keys().next().value!);
      unlinked.get(key)?.(line);
      unlinked.delete(key);
    }
    draw();
  });

  // ---- fault toggles, per local provider: read back from the provider on load ------------------
  const faults = $('#faults');
  const checkbox = (provider: string, toggle: string): HTMLInputElement | null =>
    document.querySelector<HTMLInputElement>(`[data-toggle="${provider}:${toggle}"]`);
  const adminFetch = (p: ProviderConfig, path: string, init?: RequestInit): Promise<Response> =>
    fetch(`${p.admin}${path}`, init).then((response) => {
      if (!response.ok) throw new Error(`${p.label}: HTTP ${response.status} from ${path}`);
      return response;
    });
  /** Switches flipped so far: a read of the faults that started before the last flip is stale, and shows nothing. */
  let flips = 0;
  /** Sets a toggle's fault on its provider (`once`: it removes itself after one use). */
  const setFault = async (p: ProviderConfig, toggle: Toggle, on: boolean, once = false): Promise<void> => {
    flips++;
    const id = `toggle-${toggle.id}`;
    const input = checkbox(p.id, toggle.id);
    if (input) input.checked = on;
    showOn();
    try {
      if (on) {
        const fault = { ...toggle.fault, id, ...(once ? { times: 1 } : {}) };
        await adminFetch(p, '/admin/faults', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(fault) });
      } else {
        await adminFetch(p, `/admin/faults/${id}`, { method: 'DELETE' }).catch(() => undefined); // already gone (used up)
      }
      // what the provider does, in plain words: "primary: refuses connections — fault on"
      note('toggle', `${p.label}: ${toggle.title} — fault ${on ? (once ? 'on for one request' : 'on') : 'off'}`);
    } catch (e) {
      note('error', `could not change the fault: ${String(e)}`);
    }
  };
  /** The fault bar's summary line: what is switched on. */
  const showOn = (): void => {
    const on = [...document.querySelectorAll<HTMLInputElement>('[data-toggle]:checked')].map((i) => {
      const [provider, id] = (i.dataset['toggle'] ?? '').split(':');
      return `${provider}: ${TOGGLES.find((t) => t.id === id)?.label ?? id}`;
    });
    if ($<HTMLInputElement>('#mcp-down').checked) on.push('MCP tools server: down');
    $('#faults-on').textContent = on.length === 0 ? '— none on' : `— on: ${on.join(', ')}`;
  };
  /** Reads each local provider's faults and shows them on the toggles (after a reload, and after each answer). */
  const syncFaults = async (): Promise<void> => {
    const asOf = flips;
    await Promise.all([
      fetch(config.mcp.admin)
        .then(async (response) => {
          if (!response.ok) throw new Error(`HTTP ${response.status}`);
          const state = (await response.json()) as { down: boolean };
          if (flips !== asOf) return;
          $<HTMLInputElement>('#mcp-down').checked = state.down;
          showOn();
        })
        .catch((e: unknown) => void note('error', `could not read the MCP server's faults: ${String(e)}`)),
      ...locals.map(async (p) => {
        try {
          const { faults: active } = (await (await adminFetch(p, '/admin/faults')).json()) as { faults: { id: string }[] };
          if (flips !== asOf) return;
          const ids = new Set(active.map((f) => f.id));
          for (const toggle of TOGGLES) {
            const input = checkbox(p.id, toggle.id);
            if (input) input.checked = ids.has(`toggle-${toggle.id}`);
          }
          showOn();
        } catch (e) {
          note('error', `could not read the faults of ${p.label}: ${String(e)}`);
        }
      }),
    ]);
  };
  // a table: a column per fault, a row per local provider
  const head = el('tr');
  head.append(el('th', 'provider-name', 'fault →'));
  for (const toggle of TOGGLES) {
    const th = el('th', '', toggle.label);
    th.title = toggle.title;
    head.append(th);
  }
  faults.append(head);
  for (const p of locals) {
    const row = el('tr', 'provider');
    row.dataset['provider'] = p.id;
    row.append(el('th', 'provider-name', `${p.label} (${p.protocol})`));
    for (const toggle of TOGGLES) {
      const cell = el('td');
      const label = el('label');
      label.title = `${p.label}: ${toggle.title}`;
      const input = document.createElement('input');
      input.type = 'checkbox';
      input.dataset['toggle'] = `${p.id}:${toggle.id}`;
      input.setAttribute('aria-label', `${p.label}: ${toggle.label}`);
      input.addEventListener('change', () => void setFault(p, toggle, input.checked));
      // the fault's name beside its toggle, shown when the table folds to a row of toggles per provider (a narrow window)
      label.append(input, el('span', 'fault-name', toggle.label));
      cell.append(label);
      row.append(cell);
    }
    faults.append(row);
  }
  // the fault bar folds away on a narrow window (its summary line says what is on)
  const controls = $<HTMLDetailsElement>('#controls');
  if (window.matchMedia('(max-width: 900px)').matches) controls.open = false;
  await syncFaults();

  // ---- the MCP server of the tools: down (503 to everything), or restarted (what was in flight cut) --
  const mcpDown = $<HTMLInputElement>('#mcp-down');
  mcpDown.addEventListener('change', () => {
    flips++;
    const on = mcpDown.checked;
    showOn();
    agent.mcpFault({ down: on }).then(
      () => void note('toggle', `MCP tools server: ${on ? 'down (503 to every request)' : 'up'}`),
      (e: unknown) => void note('error', `could not change the MCP server: ${String(e)}`),
    );
  });
  $('#mcp-restart').addEventListener('click', () => {
    agent.mcpFault({ restart: true }).then(
      () =>
        void note(
          'toggle',
          'MCP tools server restarted: the calls in flight cut, no session to forget (MCP 2026-07-28 is stateless): the next call is answered as before',
        ),
      (e: unknown) => void note('error', `could not restart the MCP server: ${String(e)}`),
    );
  });

  const slow = $<HTMLInputElement>('#slow-search');
  slow.addEventListener('change', () => (agent.slowSearch = slow.checked));
  const mode = $<HTMLSelectElement>('#mid-stream');
  mode.addEventListener('change', () => (agent.midStream = mode.value === 'continue' ? 'continue' : 'restart'));

  // ---- chat -----------------------------------------------------------------------------------
  const form = $<HTMLFormElement>('#ask');
  const input = $<HTMLInputElement>('#question');
  const send = $<HTMLButtonElement>('#send');
  /** Runs after the current answer (a chip's one-question arrangement undone). */
  let afterAnswer: (() => void) | undefined;

  /** Answers so far (each download is named by its number). */
  let answers = 0;
  const ask = (question: string): void => {
    send.disabled = true;
    for (const chip of document.querySelectorAll<HTMLButtonElement>('.chip')) chip.disabled = true;
    history.push({ role: 'user', content: question });
    chat.append(el('div', 'bubble user', question));
    const bubble = el('div', 'bubble assistant streaming');
    const text = el('div', 'text');
    let live = el('span', 'live');
    text.append(live);
    const markers = el('ul', 'markers');
    markers.hidden = true;
    const status = el('div', 'status');
    bubble.append(text, markers, status);
    chat.append(bubble);
    bubble.scrollIntoView({ block: 'end' });
    const midStream = agent.midStream;
    // how this answer is replayed as a test: the conversation up to the question, the settings, the open breakers
    const asked: DemoReplay = {
      history: [...history],
      midStream,
      open: agent.breakers.names().filter((name) => agent.breakers.get(name).state !== 'closed'),
      providers: config.providers.map((p) => p.id),
    };
    const runEvents: AgentEvent[] = [];
    answers++;

    /** A marker under the answer, linked to its log line; the same marker again counts up. */
    const mark = (kind: string, label: string, event: object): void => {
      const line = logLineOf(event);
      const existing = [...markers.children].find((m) => (m as HTMLElement).dataset['label'] === label) as HTMLElement | undefined;
      if (existing) {
        const count = Number(existing.dataset['count'] ?? '1') + 1;
        existing.dataset['count'] = String(count);
        existing.querySelector('.count')!.textContent = ` ×${count}`;
        if (line) existing.querySelector('a')!.href = `#${line.id}`;
        return;
      }
      const item = el('li', `marker ${kind}`);
      item.dataset['kind'] = kind;
      item.dataset['label'] = label;
      const link = el('a', '', label) as HTMLAnchorElement;
      let target: HTMLElement | undefined;
      const linkTo = (to: HTMLElement): void => {
        target = to;
        link.href = `#${to.id}`;
        link.title = 'show it in the healing log';
      };
      link.addEventListener('click', (click) => {
        click.preventDefault();
        if (target) flash(target);
      });
      if (line) linkTo(line);
      else unlinked.set(JSON.stringify(event), linkTo);
      item.append(link, el('span', 'count'));
      markers.append(item);
      markers.hidden = false;
    };

    /** Tool calls in flight, and whether a degradation answered for them. */
    const pending = new Map<string, { name: string; degraded?: string }>();
    const onEvent = (e: AgentEvent): void => {
      runEvents.push(e);
      switch (e.type) {
        case 'text-delta':
          live.textContent += e.text;
          break;
        case 'reset': {
          // the partial answer is visibly discarded, never silently joined to the next one
          const discarded = el('del', 'discarded', live.textContent ?? '');
          discarded.title = `discarded (${e.reason} → ${e.target})`;
          live.replaceWith(discarded);
          live = el('span', 'live');
          discarded.after(live);
          break;
        }
        case 'retry':
          mark('retry', `${MARKS.retry} ${e.target} retry ${e.attempt}/${e.max}: ${e.category}, waited ${e.delayMs} ms`, e);
          break;
        case 'fallback':
          if (e.midStream && midStream === 'continue')
            mark('continuation', `${MARKS.fallback} continued on ${e.to}: ${e.from} died mid-answer (${e.reason})`, e);
          else if (e.midStream)
            mark('fallback', `${MARKS.fallback} restarted on ${e.to}: ${e.from} died mid-answer (${e.reason}), its partial answer struck through`, e);
          else if (e.reason === 'circuit_open') mark('fallback', `${MARKS.fallback} ${e.from} skipped (circuit open) → ${e.to}`, e);
          else mark('fallback', `${MARKS.fallback} fallback ${e.from} → ${e.to} (${e.reason})`, e);
          break;
        case 'hedge':
          // the hedge sent, and who won when a hedge did (the first request winning alone is no news)
          if (e.kind === 'started' || (e.kind === 'won' && e.attempt > 0)) mark('hedge', `${MARKS.hedge} ${hedgeText(e)}`, e);
          break;
        case 'resume':
          mark(
            'resume',
            `${MARKS.resume} resumed on ${e.target}: the stream ${e.reason} after event ${e.startingAfter}, picked up where it stopped (${e.attempt}/${e.max})`,
            e,
          );
          break;
        case 'reflection':
          mark('reflection', `${MARKS.reflection} ${reflectionText(e)}`, e);
          status.textContent = `${e.tool} failed: asking the model to correct its call (${e.attempt}/${e.max})…`;
          break;
        case 'degraded':
          mark('degradation', `${MARKS.degradation} ${e.capability} degraded (${e.reason}): answered without it`, e);
          for (const call of pending.values()) call.degraded = e.reason;
          break;
        case 'tool-call':
          pending.set(e.id, { name: e.name });
          status.textContent = `calling ${e.name}(${JSON.stringify(e.args)})…`;
          break;
        case 'tool-result': {
          const call = pending.get(e.id);
          pending.delete(e.id);
          status.textContent = call?.degraded === undefined ? `${e.name} answered` : `${e.name} degraded (${call.degraded}): answering without it`;
          break;
        }
        case 'tool-error':
          pending.delete(e.id);
          toolErrors.set(e.name, e.error);
          status.textContent = `${e.name} failed: ${e.error}`;
          break;
        case 'message':
          history.push(e.message);
          if (e.message.role === 'assistant' && !e.message.toolCalls) {
            bubble.classList.remove('streaming');
            bubble.classList.add('done');
            status.textContent = '';
          }
          break;
        default:
          break;
      }
      draw();
    };
    const finished = (): void => {
      offerAsTest(bubble, runEvents, asked, answers);
      send.disabled = false;
      for (const chip of document.querySelectorAll<HTMLButtonElement>('.chip')) chip.disabled = false;
      afterAnswer?.();
      afterAnswer = undefined;
      void syncFaults();
      bubble.scrollIntoView({ block: 'end' });
    };
    agent.ask(history).subscribe({
      next: onEvent,
      error: (error: unknown) => {
        bubble.classList.remove('streaming');
        bubble.classList.add('failed');
        status.textContent = `Could not answer: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`;
        note('error', status.textContent);
        finished();
      },
      complete: () => {
        finished();
        input.focus();
      },
    });
  };

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const question = input.value.trim();
    if (!question || send.disabled) return;
    input.value = '';
    ask(question);
  });

  // ---- suggestion chips: one healing path each ------------------------------------------------
  /**
   * Each chip shows its own healing path from a fresh start: every circuit an earlier question
   * left open is closed first (the log shows it), so the answer is not a chain of skips past a
   * breaker the previous chip opened. Its fault (`toggle`) goes on the first local provider that
   * has it on already, else on the first with no fault switched on by hand (a provider dying
   * mid-answer needs another one to go on).
   */
  const freshStart = (toggle?: Toggle): ProviderConfig | undefined => {
    for (const name of names) if (agent.breakers.get(name).state !== 'closed') agent.breakers.get(name).reset();
    if (toggle === undefined) return undefined;
    const faultless = (p: ProviderConfig): boolean => TOGGLES.every((t) => !checkbox(p.id, t.id)?.checked);
    return locals.find((p) => checkbox(p.id, toggle.id)?.checked) ?? locals.find(faultless) ?? locals[0];
  };
  const chips = $('#chips');
  for (const chip of CHIPS) {
    const button = el('button', 'chip', chip.label) as HTMLButtonElement;
    button.type = 'button';
    button.dataset['chip'] = chip.id;
    button.title = chip.question;
    button.addEventListener('click', () => {
      if (send.disabled) return;
      void (async () => {
        if (chip.arm === 'slow-search') {
          freshStart();
          const was = slow.checked;
          slow.checked = agent.slowSearch = true;
          afterAnswer = () => (slow.checked = agent.slowSearch = was);
        } else {
          const toggle = TOGGLES.find((t) => t.id === (chip.arm as { toggle: string }).toggle)!;
          const target = freshStart(toggle);
          if (target && !checkbox(target.id, toggle.id)?.checked) await setFault(target, toggle, true, true);
        }
        ask(chip.question);
      })();
    });
    chips.append(button);
  }

  $('#timings').textContent =
    `retries ${DEMO.retries} from ${DEMO.initialBackoffMs} ms · breaker opens after ${DEMO.failureThreshold} failed request, probes after ${DEMO.resetTimeoutMs / 1000} s · ` +
    `first chunk ${DEMO.firstChunkMs / 1000} s, idle ${DEMO.idleMs / 1000} s · hedge after the p95 first token (${DEMO.hedgeFloorMs / 1000}–${DEMO.hedgeCeilingMs / 1000} s) · search deadline ${DEMO.searchDeadlineMs / 1000} s`;
  draw();
  input.focus();
  document.body.dataset['ready'] = 'true';
}

main().catch((e: unknown) => showPageError(e instanceof Error ? e.message : String(e)));
