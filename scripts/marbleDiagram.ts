/**
 * Draws one marble diagram from what its block did (scripts/marbleRun.ts), with swirly's renderer
 * (no browser), so that it reads without its code, as in the RxJS docs:
 *
 * - one line per subscription of each input (each attempt of a retry, each alternative of a
 *   fallback, each model call), starting where it was subscribed and ending where it ended or was
 *   unsubscribed; with `calls`, one line per call (the caller's view);
 * - time runs left to right on a shared scale: short gaps get one marble's width, longer ones grow
 *   with their length (so 500 → 1 000 → 2 000 ms look like it), and a time axis under the diagram
 *   gives each event's time in ms and labels every gap of 10 ms or more;
 * - values are named in their marble when the name is short (`503`, `ok`, `d`), otherwise the
 *   marble keeps its letter and a legend under the diagram says what it is; an error is named
 *   after the end of its line (`RetriesExhaustedError after 4 attempts`), and so is an
 *   unsubscription;
 * - marbles at the same time on one line sit side by side in their order, never on top of each
 *   other (spec/docs/diagrams.spec.ts parses every SVG and checks that no two marbles or labels
 *   overlap).
 */
import { renderMarbleDiagram } from '@swirly/renderer-node';
import { lightStyles } from '@swirly/theme-default-light';
import {
  AllFallbacksFailedError,
  CircuitOpenError,
  HttpError,
  Reflection,
  RetriesExhaustedError,
  TotalTimeoutError,
  ToolError,
  type AgentEvent,
} from '../src/index.js';
import { readHeader } from '../src/providers/index.js';
import { describeEvent } from '../src/testing/index.js';
import { named, one } from './marbleBlocks.js';
import type { Note, Trace, TraceLine } from './marbleRun.js';

const SVG_NS = 'http://www.w3.org/2000/svg';
/** Horizontal room of one marble (its diameter and a gap). */
const SLOT = 40;
/** Left margin of every line before time 0, so a marble at 0 does not stick out. */
const X0 = 24;
const RADIUS = 17;
const STREAM_HEIGHT = 34;
const SPACING = 12;
const OPERATOR_HEIGHT = 44;
const OPERATOR_SPACING = 8;
const PADDING = 16;
const FONT = 'Arial, Helvetica, sans-serif';
const TITLE_FONT = 14;
const LABEL_FONT = 13;
const AXIS_FONT = 11;
const LEGEND_FONT = 13;
const ERROR_FILL = 'hsl(0, 70%, 85%)';

/** An estimate of a text's width in px (Arial averages about 0.6 em per character). */
export function textWidth(text: string, fontSize: number): number {
  return [...text].length * fontSize * 0.6;
}

/** `59999` → `59 999`. */
function ms(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ' ');
}

function truncate(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** A text in quotes, spaces kept (a text delta's leading space matters), cut to `max` characters. */
function quote(text: string, max = 48): string {
  const flat = text.replace(/\n/g, '⏎');
  return `“${flat.length > max ? `${flat.slice(0, max - 1)}…` : flat}”`;
}

/** The name of an error as a diagram shows it after the ✕ (or in the legend). */
export function errorText(error: unknown): string {
  if (error instanceof HttpError) {
    const retryAfter = readHeader(error.headers, 'retry-after');
    return retryAfter === undefined ? `${error.status}` : `${error.status}, retry-after ${retryAfter} s`;
  }
  if (error instanceof RetriesExhaustedError) {
    return `RetriesExhaustedError after ${error.attempts} attempt${error.attempts === 1 ? '' : 's'}${error.reason === 'max_retries' ? '' : ` (${error.reason})`}`;
  }
  if (error instanceof CircuitOpenError) {
    return Number.isFinite(error.retryAfterMs) ? `CircuitOpenError, probe in ${ms(error.retryAfterMs)} ms` : 'CircuitOpenError (isolated)';
  }
  if (error instanceof TotalTimeoutError) return `TotalTimeoutError (${ms(error.timeoutMs)} ms budget)`;
  if (error instanceof AllFallbacksFailedError) return `AllFallbacksFailedError [${error.errors.map(shortError).join(', ')}]`;
  if (error instanceof ToolError) return `ToolError: ${truncate(error.message, 44)}`;
  if (error instanceof Error) return error.message.length > 0 && error.message.length <= 32 ? `${error.name}: ${error.message}` : error.name;
  return String(error);
}

function shortError(error: unknown): string {
  if (error instanceof HttpError) return String(error.status);
  if (error instanceof CircuitOpenError) return 'open';
  return error instanceof Error ? error.name : String(error);
}

function isEvent(value: unknown): value is AgentEvent {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string';
}

/** A value in words, for the legend. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return /^\s|\s$/.test(value) || value === '' ? quote(value) : truncate(value, 96);
  if (typeof value !== 'object' || value === null) return String(value);
  if (value instanceof Error) return errorText(value);
  if (value instanceof Reflection) {
    return `Reflection ${value.toolName} ${value.exhausted ? '(give up)' : `${value.attempt}/${value.max}`}: ${quote(value.prompt, 60)}`;
  }
  if (Array.isArray(value)) return `[${value.map((v) => describeValue(v)).join(', ')}]`;
  if (isEvent(value)) {
    const e = value;
    switch (e.type) {
      case 'text-delta':
        return `text-delta ${quote(e.text)}`;
      case 'finish':
        return `finish (${e.reason})`;
      case 'reset':
        return `reset (${e.reason}), next ${e.target ?? ''}`.trim();
      case 'tool-call':
        return `tool-call ${e.name}(${JSON.stringify(e.args)})`;
      case 'tool-result':
        return `tool-result ${e.name}: ${truncate(JSON.stringify(e.result), 48)}`;
      case 'tool-error':
        return `tool-error ${e.name}: ${quote(e.error)}`;
      case 'reflection':
        return `reflection ${e.tool} ${e.exhausted ? '(give up)' : `${e.attempt}/${e.max}`}: ${quote(e.prompt, 40)}`;
      case 'message':
        return `${e.message.role} message ${quote(typeof e.message.content === 'string' ? e.message.content : JSON.stringify(e.message.content), 56)}${'isError' in e.message && e.message.isError ? ' (an error)' : ''}`;
      case 'degraded':
        return `degraded ${e.capability}: ${e.reason}`;
      case 'restored':
        return `restored ${e.capability}`;
      default:
        return describeEvent(e);
    }
  }
  const record = value as Record<string, unknown>;
  if (typeof record['role'] === 'string' && 'content' in record) return `${record['role']} ${quote(String(record['content']), 40)}`;
  if (Array.isArray(record['messages'])) return `request ${describeValue(record['messages'])}`;
  return `{ ${Object.entries(record)
    .map(([k, v]) => `${k}: ${describeValue(v)}`)
    .join(', ')} }`;
}

/** What a value's marble shows, and what the legend says when the marble keeps its letter. */
export function marbleText(value: unknown, letter: string | undefined): { text: string; legend?: string; error?: boolean } {
  const key = letter ?? '?';
  if (value === letter) return { text: key };
  if (value instanceof HttpError) return { text: String(value.status), error: true };
  if ((typeof value === 'string' && value.length <= 4 && value.trim() === value && value !== '') || typeof value === 'number' || typeof value === 'boolean') {
    const text = String(value);
    if (text.length <= 5) return { text };
  }
  return { text: key, legend: describeValue(value), error: value instanceof Error };
}

function fontFor(text: string): number {
  const n = [...text].length;
  return n <= 2 ? 15 : n === 3 ? 13 : n === 4 ? 11 : 9;
}

interface Drawn {
  readonly line: TraceLine;
  /** The input's observable name, for calls' sources. */
  readonly kind: 'input' | 'call' | 'output';
}

/** The diagram's lines, in drawing order: inputs above the operator, calls and outputs below. */
function drawnLines(trace: Trace): { above: Drawn[]; below: Drawn[] } {
  let inputs = trace.inputs;
  if (trace.calls.length > 0) {
    // a call's own source subscribed once at the call, never cut: its line says nothing the call's line does not
    const sourceNames = new Set(named(trace.block, 'source').map(([n]) => n));
    const plain = new Set<string>();
    for (const name of sourceNames) {
      const subs = inputs.filter((l) => l.name === name);
      const calls = trace.calls.filter((c) => c.name === name);
      if (subs.length <= calls.length && subs.every((s) => s.cut === undefined && calls.some((c) => c.start === s.start))) plain.add(name);
    }
    inputs = inputs.filter((l) => l.name === undefined || !plain.has(l.name));
  }
  return {
    above: inputs.map((line) => ({ line, kind: 'input' as const })),
    below: [...trace.calls.map((line) => ({ line, kind: 'call' as const })), ...trace.outputs.map((line) => ({ line, kind: 'output' as const }))],
  };
}

/** Frame → x (px from the lines' origin): short gaps one slot, long gaps growing with their length. */
function timeScale(lines: TraceLine[], extra: number[]): { x: (frame: number) => number; frames: number[]; slots: Map<number, number>; end: number } {
  const slots = new Map<number, number>();
  const frames = new Set<number>([0, ...extra]);
  for (const line of lines) {
    frames.add(line.start);
    if (line.cut !== undefined) frames.add(line.cut);
    const count = new Map<number, number>();
    for (const n of line.notes) {
      frames.add(n.frame);
      count.set(n.frame, (count.get(n.frame) ?? 0) + 1);
    }
    for (const [f, c] of count) slots.set(f, Math.max(slots.get(f) ?? 1, c));
  }
  const sorted = [...frames].filter((f) => Number.isFinite(f) && f >= 0).sort((a, b) => a - b);
  const gaps = sorted.slice(1).map((f, i) => f - sorted[i]!);
  const longest = Math.max(1, ...gaps);
  const gapPx = (d: number): number => {
    if (longest <= 20) return SLOT + (d - 1) * 8;
    if (d <= 3) return SLOT + (d - 1) * 6;
    return 60 + 240 * (d / longest);
  };
  const at = new Map<number, number>();
  let x = X0;
  sorted.forEach((f, i) => {
    if (i > 0) x += ((slots.get(sorted[i - 1]!) ?? 1) - 1) * SLOT + gapPx(f - sorted[i - 1]!);
    at.set(f, x);
  });
  const last = sorted[sorted.length - 1] ?? 0;
  const end = (at.get(last) ?? X0) + ((slots.get(last) ?? 1) - 1) * SLOT;
  return {
    x: (frame) => at.get(frame) ?? X0,
    frames: sorted,
    slots,
    end,
  };
}

interface Legend {
  readonly entries: [string, string][];
  add(key: string, text: string): void;
}

function legend(): Legend {
  const entries: [string, string][] = [];
  return {
    entries,
    add(key, text) {
      if (!entries.some(([k, t]) => k === key && t === text)) entries.push([key, text]);
    },
  };
}

/** The operator box's text: the operator, or what the first `expect` observes (a `let`'s expression). */
function heading(trace: Trace): string {
  const block = trace.block;
  const expects = named(block, 'expect');
  const subject = expects[0]?.[0];
  const defined = subject === undefined ? undefined : named(block, 'let').find(([name]) => name === subject)?.[1];
  const box = one(block, 'box');
  if (box !== undefined) return truncate(box, 90);
  const operator = one(block, 'operator') ?? defined ?? subject ?? block.title;
  return truncate(one(block, 'calls') !== undefined ? `each call through ${operator}` : operator, 90);
}

const at = (frame: number): string => (frame === 0 ? 'at once' : `after ${ms(frame)} ms`);

/** What a call's source does, in words (`fails with 503 after 1 ms`, `emits a and completes after 2 ms`). */
function describeSource(notes: readonly Note[]): string {
  if (notes.length === 0) return 'never emits';
  const byFrame = new Map<number, string[]>();
  for (const n of notes) {
    const what = n.kind === 'N' ? `emits ${describeValue(n.value)}` : n.kind === 'E' ? `fails with ${errorText(n.value)}` : 'completes';
    byFrame.set(n.frame, [...(byFrame.get(n.frame) ?? []), what]);
  }
  return [...byFrame].map(([frame, whats]) => `${whats.join(' and ')} ${at(frame)}`).join(', ');
}

interface Row {
  readonly drawn: Drawn;
  readonly y: number;
  /** Where the line's arrow ends, and what is written after it. */
  readonly tip: number;
  readonly after?: string;
}

/** The SVG of one block's diagram, or undefined when it has nothing to draw. */
export function diagramSvg(trace: Trace): string | undefined {
  const { above, below } = drawnLines(trace);
  const all = [...above, ...below];
  if (all.length === 0) return undefined;
  const scale = timeScale(
    all.map((d) => d.line),
    trace.unsubscribeAt === undefined ? [] : [trace.unsubscribeAt],
  );
  const titleWidth = Math.ceil(Math.max(60, ...all.map((d) => textWidth(d.line.title, TITLE_FONT))) + 16);
  const key = legend();
  for (const [name, text] of named(trace.block, 'legend')) key.add(name, text);
  const given = new Set(key.entries.map(([k]) => k));

  const lineEnd = scale.end + SLOT / 2;
  const streams = all.map((drawn) => {
    const { line } = drawn;
    const start = scale.x(line.start);
    const index = new Map<number, number>();
    const messages = line.notes.map((n) => {
      const k = index.get(n.frame) ?? 0;
      index.set(n.frame, k + 1);
      const px = scale.x(n.frame) + k * SLOT - start;
      if (n.kind === 'E') return { frame: px, notification: { kind: 'E' } };
      if (n.kind === 'C') return { frame: px - (k > 0 ? SLOT / 2 - 6 : 0), notification: { kind: 'C' } };
      const shown = marbleText(n.value, n.letter);
      if (shown.legend !== undefined && !given.has(shown.text)) key.add(shown.text, shown.legend);
      return {
        frame: px,
        notification: { kind: 'N', value: shown.text },
        styles: { value_font_size: fontFor(shown.text), ...(shown.error ? { fill_color: ERROR_FILL } : {}) },
      };
    });
    const terminal = line.notes.find((n) => n.kind !== 'N');
    const last = messages[messages.length - 1]?.frame ?? 0;
    const duration = terminal !== undefined ? last : line.cut !== undefined ? Math.max(last, scale.x(line.cut) - start) : Math.max(last, lineEnd - start);
    const error = line.notes.find((n) => n.kind === 'E');
    const after = error !== undefined ? errorText(error.value) : line.cut !== undefined ? `unsubscribed at ${ms(line.cut)} ms` : undefined;
    return { drawn, start, duration, after, spec: { kind: 'S', title: line.title, frame: start, duration, messages } };
  });

  const operatorTitle = heading(trace);
  const styles = {
    ...lightStyles,
    frame_width: 1,
    canvas_padding: PADDING,
    event_radius: RADIUS,
    event_value_font_size: 15,
    error_size: 22,
    completion_height: STREAM_HEIGHT,
    stream_spacing: SPACING,
    stream_title_width: titleWidth,
    stream_title_font_size: TITLE_FONT,
    operator_height: OPERATOR_HEIGHT,
    operator_spacing: OPERATOR_SPACING,
    operator_title_font_size: 16,
    arrow_width: 8,
    minimum_width: Math.max(titleWidth + lineEnd + STREAM_HEIGHT, textWidth(operatorTitle, 16) + 40),
  };
  const content = [
    ...streams.slice(0, above.length).map((s) => s.spec),
    { kind: 'O', title: [{ type: 'text', value: operatorTitle }] },
    ...streams.slice(above.length).map((s) => s.spec),
  ];
  const rendering = renderMarbleDiagram({ content, styles: {} } as never, { styles } as never) as unknown as {
    document: XmlDocument;
    width: number;
    height: number;
  };
  const doc = rendering.document;
  const svg = doc.documentElement;

  // rows, as swirly stacked them: each stream STREAM_HEIGHT high, the operator with its spacing
  const rows: Row[] = [];
  let y = PADDING;
  streams.forEach((s, i) => {
    if (i === above.length) y += OPERATOR_HEIGHT + 2 * OPERATOR_SPACING + SPACING;
    const tip = PADDING + titleWidth + s.start + s.duration + STREAM_HEIGHT;
    rows.push({ drawn: s.drawn, y, tip, ...(s.after === undefined ? {} : { after: s.after }) });
    y += STREAM_HEIGHT + SPACING;
  });
  if (above.length === streams.length) y += OPERATOR_HEIGHT + 2 * OPERATOR_SPACING + SPACING;

  const extra = doc.createElementNS(SVG_NS, 'g');
  const text = (x: number, ty: number, value: string, size: number, attrs: Record<string, string> = {}): number => {
    const el = doc.createElementNS(SVG_NS, 'text');
    const all2: Record<string, string> = {
      x: String(x),
      y: String(ty),
      'font-family': FONT,
      'font-size': `${size}px`,
      fill: 'black',
      'dominant-baseline': 'middle',
      ...attrs,
    };
    for (const [k, v] of Object.entries(all2)) el.setAttribute(k, v);
    el.textContent = value;
    extra.appendChild(el);
    const width = textWidth(value, size);
    return attrs['text-anchor'] === 'middle' ? x + width / 2 : x + width;
  };
  let right = rendering.width;
  for (const row of rows) {
    if (row.after !== undefined) right = Math.max(right, text(row.tip + 8, row.y + STREAM_HEIGHT / 2, row.after, LABEL_FONT) + PADDING);
  }

  // the time axis: a tick at each event's time, its time below (where it fits), each gap of 10 ms or more above
  const origin = PADDING + titleWidth;
  const axisTop = y - SPACING + 10;
  const gapY = axisTop + 8;
  const axisY = axisTop + 20;
  const tickY = axisY + 12;
  const line = doc.createElementNS(SVG_NS, 'line');
  for (const [k, v] of Object.entries({ x1: origin, y1: axisY, x2: origin + lineEnd + STREAM_HEIGHT, y2: axisY, stroke: '#888', 'stroke-width': 1 }))
    line.setAttribute(k, String(v));
  extra.appendChild(line);
  text(PADDING, tickY, 'time (ms)', AXIS_FONT, { fill: '#555' });
  let previousRight = -Infinity;
  for (const f of scale.frames) {
    const x = origin + scale.x(f);
    const tick = doc.createElementNS(SVG_NS, 'line');
    for (const [k, v] of Object.entries({ x1: x, y1: axisY - 3, x2: x, y2: axisY + 3, stroke: '#888', 'stroke-width': 1 })) tick.setAttribute(k, String(v));
    extra.appendChild(tick);
    const label = ms(f);
    const w = textWidth(label, AXIS_FONT);
    if (x - w / 2 > previousRight + 4) {
      text(x, tickY, label, AXIS_FONT, { 'text-anchor': 'middle', fill: '#555' });
      previousRight = x + w / 2;
    }
  }
  scale.frames.forEach((f, i) => {
    const next = scale.frames[i + 1];
    if (next === undefined || next - f < 10) return;
    const from = origin + scale.x(f) + ((scale.slots.get(f) ?? 1) - 1) * SLOT;
    const to = origin + scale.x(next);
    const label = `${ms(next - f)} ms`;
    if (textWidth(label, AXIS_FONT) + 8 <= to - from) text((from + to) / 2, gapY, label, AXIS_FONT, { 'text-anchor': 'middle', fill: '#a33' });
  });

  // the legend: calls' sources, inputs never subscribed, then every value its marble could not name
  const sources = [...trace.callSources]
    .filter(([name]) => !given.has(name))
    .map(([name, notes]): [string, string] => [
      name,
      trace.unsubscribed.includes(name) ? `a call whose source (${describeSource(notes)}) is never subscribed` : `a call whose source ${describeSource(notes)}`,
    ]);
  key.entries.unshift(...sources);
  for (const name of trace.unsubscribed) if (!given.has(name) && !trace.callSources.has(name)) key.add(name, 'never subscribed');
  let ly = tickY + 22;
  for (const [k, v] of key.entries) {
    const end = text(PADDING, ly, `${k}:`, LEGEND_FONT, { 'font-weight': 'bold' });
    right = Math.max(right, text(end + 6, ly, truncate(v, 120), LEGEND_FONT) + PADDING);
    ly += LEGEND_FONT + 6;
  }
  const height = ly - (LEGEND_FONT + 6) / 2 + PADDING;
  const width = Math.ceil(right);

  svg.appendChild(extra);
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('width', String(width));
  svg.setAttribute('height', String(height));
  const background = svg.getElementsByTagName('rect')[0];
  background?.setAttribute('width', String(width));
  background?.setAttribute('height', String(height));
  return `${String(svg)}\n`;
}

/** The bits of xmldom's document used here. */
interface XmlElement {
  setAttribute(name: string, value: string): void;
  appendChild(child: XmlElement): void;
  getElementsByTagName(name: string): ArrayLike<XmlElement>;
  textContent: string | null;
}
interface XmlDocument {
  readonly documentElement: XmlElement;
  createElementNS(ns: string, name: string): XmlElement;
}
