/**
 * The chat page: streamed answers, and beside them what the healing does — per-provider and
 * per-tool circuits with the countdown to the next probe, retries with their backoff countdown,
 * fallbacks, reflections, degraded capabilities — plus a toggle for every fault of the local
 * providers. Runs in the browser; bundled by the demo server with esbuild.
 */
import { summarize, type AgentEvent, type CircuitBreaker, type Message, type ResilienceSummary } from '../../src/index.js';
import { createDemoAgent, DEMO, type ProviderConfig } from './agent.js';

interface PageConfig {
  readonly providers: readonly ProviderConfig[];
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

/** Fault toggles offered per local provider: label → the fault posted to /admin/faults. */
const TOGGLES: readonly { id: string; label: string; fault: Record<string, unknown> }[] = [
  { id: 'off', label: 'off (connection refused)', fault: { kind: 'down' } },
  { id: '429', label: '429 + retry-after 1 s', fault: { kind: 'status', status: 429, retryAfter: 1 } },
  { id: '500', label: '500', fault: { kind: 'status', status: 500 } },
  { id: '503', label: '503', fault: { kind: 'status', status: 503 } },
  { id: 'no-retry', label: '503 + x-should-retry: false', fault: { kind: 'status', status: 503, shouldRetry: false } },
  { id: 'reset', label: 'reset after 3 chunks', fault: { kind: 'reset', afterChunks: 3 } },
  { id: 'stall', label: 'stall (headers, then silence)', fault: { kind: 'stall', afterChunks: 2 } },
  { id: 'slow', label: 'slow first byte (3 s)', fault: { kind: 'slow-first-byte', delayMs: 3000 } },
  { id: 'malformed', label: 'malformed chunk', fault: { kind: 'malformed', afterChunks: 2 } },
  { id: 'bad-args', label: 'bad tool arguments (once)', fault: { kind: 'bad-tool-args', times: 1 } },
];

async function main(): Promise<void> {
  const config = (await (await fetch('/config.json')).json()) as PageConfig;
  const agent = createDemoAgent(config.providers);
  (window as unknown as { rxhealDemo: unknown }).rxhealDemo = agent;
  const history: Message[] = [];
  const log = $('#log');
  const chat = $('#chat');

  const note = (kind: string, text: string): HTMLElement => {
    const line = el('li', `note ${kind}`);
    line.append(el('time', '', new Date().toLocaleTimeString()), el('span', '', text));
    log.prepend(line);
    return line;
  };

  // ---- circuits: state and countdown, read from the breakers whenever drawn ----------------
  const names = [...config.providers.map((p) => `model:${p.id}`), 'tool:get_weather', 'tool:knowledge_search'];
  const circuits = $('#circuits');
  const rows = new Map<string, HTMLElement>();
  for (const name of names) {
    const row = el('li', 'circuit');
    row.dataset['breaker'] = name;
    row.append(el('span', 'name', name), el('span', 'state'), el('span', 'countdown'));
    circuits.append(row);
    rows.set(name, row);
  }
  const draw = (): void => {
    for (const [name, row] of rows) {
      const breaker: CircuitBreaker = agent.breakers.get(name);
      const state = breaker.state;
      row.dataset['state'] = state;
      row.querySelector('.state')!.textContent = state;
      const snap = breaker.snapshot();
      const left = snap.openUntil === null ? 0 : Math.max(0, snap.openUntil - Date.now());
      row.querySelector('.countdown')!.textContent = state === 'open' ? `probe in ${(left / 1000).toFixed(1)} s` : '';
    }
    const degraded = agent.capabilities.degraded();
    const banner = $('#degraded');
    banner.hidden = degraded.size === 0;
    banner.textContent = [...degraded].map(([c, reason]) => `${c} unavailable: ${reason}`).join(' · ');
    for (const retry of document.querySelectorAll<HTMLElement>('[data-retry-at]')) {
      const left = Number(retry.dataset['retryAt']) - Date.now();
      retry.querySelector('.countdown')!.textContent = left > 0 ? ` — retrying in ${(left / 1000).toFixed(1)} s` : ' — retried';
    }
  };
  setInterval(draw, 200);
  draw();

  // ---- the healing log: everything the hub reports -------------------------------------------
  agent.hub.events$.subscribe((e) => {
    switch (e.type) {
      case 'retry': {
        const line = note('retry', `${e.target}: ${e.category}, retry ${e.attempt}/${e.max} after ${e.delayMs} ms`);
        line.dataset['retryAt'] = String(Date.now() + e.delayMs);
        line.append(el('span', 'countdown'));
        break;
      }
      case 'retry-succeeded':
        note('ok', `${e.target}: attempt ${e.attempt} succeeded`);
        break;
      case 'circuit':
        if (e.kind === 'transition') note(`breaker-${e.to}`, `circuit ${e.breaker}: ${e.from} → ${e.to} (${e.reason})`);
        else note('breaker-open', `circuit ${e.breaker} is open: call rejected without reaching it`);
        break;
      case 'fallback':
        note('fallback', `fallback ${e.from} → ${e.to} (${e.reason}${e.midStream ? ', mid-answer' : ''})`);
        break;
      case 'degraded':
        note('degraded', `${e.capability} degraded: ${e.reason}`);
        break;
      case 'restored':
        note('ok', `${e.capability} restored`);
        break;
      case 'budget-exceeded':
        note('error', `budget exceeded: ${e.resource} ${e.used}/${e.limit}`);
        break;
      default:
        break;
    }
    draw();
  });

  // ---- the summary: what the healing did so far (summarize over the hub) ----------------------
  const summary = $('#summary');
  const pct = (x: number | null): string => (x === null ? '—' : `${Math.round(x * 100)} %`);
  const render = (s: ResilienceSummary): void => {
    const rows: [string, string][] = [
      ['model calls / tool calls', `${s.calls.model} / ${s.calls.tool}`],
      ['retries (succeeded)', `${s.retries.total} (${s.retries.succeeded})`],
      ['fallbacks per model call', `${s.fallbacks.total} (${pct(s.fallbacks.perModelCall)})`],
      ['reflections', String(s.reflections.total)],
      ...Object.entries(s.circuits)
        .filter(([, c]) => c.opened > 0)
        .map(([name, c]): [string, string] => [`${name} opened`, `${c.opened}× · open ${(c.openMs / 1000).toFixed(1)} s · ${c.rejected} rejected`]),
      ...Object.entries(s.capabilities).map(([name, c]): [string, string] => [`${name} degraded`, `${c.degraded}× · ${(c.degradedMs / 1000).toFixed(1)} s`]),
    ];
    summary.replaceChildren(...rows.map(([k, v]) => {
      const row = el('tr');
      row.append(el('th', '', k), el('td', '', v));
      return row;
    }));
  };
  summarize(agent.hub.events$).subscribe(render);

  // ---- fault toggles, per local provider ------------------------------------------------------
  const faults = $('#faults');
  for (const p of config.providers) {
    if (!p.admin) continue;
    const box = el('fieldset', 'provider');
    box.dataset['provider'] = p.id;
    box.append(el('legend', '', `${p.label} (${p.protocol})`));
    for (const toggle of TOGGLES) {
      const label = el('label');
      const input = document.createElement('input');
      input.type = 'checkbox';
      input.dataset['toggle'] = `${p.id}:${toggle.id}`;
      input.addEventListener('change', () => {
        const id = `toggle-${toggle.id}`;
        const request = input.checked
          ? fetch(`${p.admin}/admin/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...toggle.fault, id }) })
          : fetch(`${p.admin}/admin/faults/${id}`, { method: 'DELETE' });
        request.then(
          () => note('toggle', `${p.label}: ${toggle.label} ${input.checked ? 'on' : 'off'}`),
          (e: unknown) => note('error', `could not change the fault: ${String(e)}`),
        );
      });
      label.append(input, document.createTextNode(` ${toggle.label}`));
      box.append(label);
    }
    faults.append(box);
  }
  const slow = $<HTMLInputElement>('#slow-search');
  slow.addEventListener('change', () => (agent.slowSearch = slow.checked));
  const mode = $<HTMLSelectElement>('#mid-stream');
  mode.addEventListener('change', () => (agent.midStream = mode.value === 'continue' ? 'continue' : 'restart'));

  // ---- chat -----------------------------------------------------------------------------------
  const form = $<HTMLFormElement>('#ask');
  const input = $<HTMLInputElement>('#question');
  const send = $<HTMLButtonElement>('#send');
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const question = input.value.trim();
    if (!question || send.disabled) return;
    input.value = '';
    send.disabled = true;
    history.push({ role: 'user', content: question });
    chat.append(el('div', 'bubble user', question));
    const bubble = el('div', 'bubble assistant streaming');
    let live = el('span', 'live');
    bubble.append(live);
    chat.append(bubble);
    const status = el('div', 'status');
    bubble.append(status);
    const onEvent = (e: AgentEvent): void => {
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
        case 'tool-call':
          status.textContent = `calling ${e.name}(${JSON.stringify(e.args)})…`;
          break;
        case 'reflection':
          note('reflection', `reflection on ${e.tool} (${e.attempt}/${e.max}): ${e.prompt}`);
          break;
        case 'tool-result':
          status.textContent = `${e.name} answered`;
          break;
        case 'tool-error':
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
    agent.ask(history).subscribe({
      next: onEvent,
      error: (error: unknown) => {
        bubble.classList.remove('streaming');
        bubble.classList.add('failed');
        status.textContent = `Could not answer: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`;
        note('error', status.textContent);
        send.disabled = false;
      },
      complete: () => {
        send.disabled = false;
        input.focus();
      },
    });
  });
  $('#timings').textContent =
    `retries ${DEMO.retries} from ${DEMO.initialBackoffMs} ms · breaker opens after ${DEMO.failureThreshold} failed request, probes after ${DEMO.resetTimeoutMs / 1000} s · ` +
    `first chunk ${DEMO.firstChunkMs / 1000} s, idle ${DEMO.idleMs / 1000} s · search deadline ${DEMO.searchDeadlineMs / 1000} s`;
  document.body.dataset['ready'] = 'true';
}

main().catch((e: unknown) => showPageError(e instanceof Error ? e.message : String(e)));
