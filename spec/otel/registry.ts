/**
 * The OpenTelemetry semantic conventions' registry, read from the YAML kept in
 * spec/fixtures/otel-semconv (see its README): the attributes it defines (with their enum
 * members' values) and the metrics, with the attributes each may carry.
 *
 * Only the part of the YAML the registry's files use for these is read (no YAML parser is a
 * dependency of rxheal): groups (`- id:` at indent 2) of `type: attribute_group` (attributes:
 * `- id:` at indent 6 under `attributes:`, members' `value:` below them) and of `type: metric`
 * (`metric_name:`, `extends:`, and `- ref:` attributes).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Where the registry YAML is kept. */
export const REGISTRY = new URL('../fixtures/otel-semconv/', import.meta.url).pathname;

export interface Registry {
  /** Attribute name → its enum members' values (empty for a free-form attribute). */
  readonly attributes: ReadonlyMap<string, readonly string[]>;
  /** Metric name → the attributes it may carry (its own `ref`s and those of the groups it extends). */
  readonly metrics: ReadonlyMap<string, readonly string[]>;
}

interface Group {
  readonly id: string;
  type?: string;
  metric?: string;
  extends?: string;
  refs: string[];
  attributes: Map<string, string[]>;
}

const unquote = (s: string): string => s.trim().replace(/^(["'])(.*)\1$/, '$2');

/** The groups of one registry file. */
export function groupsOf(yaml: string): Group[] {
  const groups: Group[] = [];
  let group: Group | undefined;
  let attribute: string[] | undefined;
  for (const line of yaml.split('\n')) {
    const top = /^ {2}- id: (\S+)\s*$/.exec(line);
    if (top) {
      group = { id: top[1]!, refs: [], attributes: new Map() };
      groups.push(group);
      attribute = undefined;
      continue;
    }
    if (!group) continue;
    const field = /^ {4}(type|metric_name|extends): (.+)$/.exec(line);
    if (field) {
      const value = unquote(field[2]!);
      if (field[1] === 'type') group.type = value;
      else if (field[1] === 'metric_name') group.metric = value;
      else group.extends = value;
      continue;
    }
    const id = /^ {6}- id: (\S+)\s*$/.exec(line);
    if (id) {
      attribute = [];
      group.attributes.set(id[1]!, attribute);
      continue;
    }
    const ref = /^ {6}- ref: (\S+)\s*$/.exec(line);
    if (ref) {
      group.refs.push(ref[1]!);
      attribute = undefined;
      continue;
    }
    const value = /^ {14,}value: (.+)$/.exec(line);
    if (value && attribute) attribute.push(unquote(value[1]!));
  }
  return groups;
}

/** Every `.yaml` file under `dir`. */
function yamlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? yamlFiles(path) : entry.name.endsWith('.yaml') ? [path] : [];
  });
}

/** The registry kept in spec/fixtures/otel-semconv. */
export function readRegistry(dir = REGISTRY): Registry {
  const groups = yamlFiles(join(dir, 'model')).flatMap((file) => groupsOf(readFileSync(file, 'utf8')));
  const byId = new Map(groups.map((g) => [g.id, g]));
  const attributes = new Map<string, readonly string[]>();
  for (const g of groups)
    if (g.type === 'attribute_group' && g.id.startsWith('registry.')) for (const [key, values] of g.attributes) attributes.set(key, values);
  const refsOf = (g: Group | undefined): string[] => (g ? [...g.refs, ...refsOf(g.extends === undefined ? undefined : byId.get(g.extends))] : []);
  const metrics = new Map<string, readonly string[]>();
  for (const g of groups) if (g.type === 'metric' && g.metric !== undefined) metrics.set(g.metric, refsOf(g));
  return { attributes, metrics };
}
