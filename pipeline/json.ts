import type { Json } from './types';

/** Thrown when a value cannot be recorded as JSON without losing something. */
export class NotLosslessJsonError extends Error {
  constructor(
    readonly path: string,
    readonly problem: string,
  ) {
    super(`${path || 'value'} is not lossless JSON: ${problem}`);
    this.name = 'NotLosslessJsonError';
  }
}

/**
 * How deep arrays and objects may nest in a recorded value. Every step that walks a value recurses
 * (the snapshot, the digest, canonical JSON, the payload converter), and inside a workflow a stack
 * overflow fails the workflow task on every retry; nothing real nests this deep.
 */
export const MAX_JSON_DEPTH = 256;

/** Thrown when a value nests deeper than MAX_JSON_DEPTH. */
class JsonTooDeepError extends Error {
  constructor(readonly path: string) {
    super(
      `${path.length > 60 ? `${path.slice(0, 60)}…` : path || 'value'} nests arrays/objects more than ${MAX_JSON_DEPTH} levels deep, the most Sluice accepts; send flatter data`,
    );
    this.name = 'JsonTooDeepError';
  }
}

/**
 * Copies `value` into plain, frozen JSON, or throws NotLosslessJsonError naming the first part
 * that JSON would silently change: undefined, functions, symbols, BigInt, NaN/Infinity, -0,
 * cycles, sparse arrays, class instances, symbol keys, accessors (which may throw or lie).
 */
export function snapshotJson(value: unknown, path = ''): Json {
  return copy(value, path, new Set());
}

function copy(value: unknown, path: string, ancestors: Set<object>): Json {
  if (ancestors.size >= MAX_JSON_DEPTH && value !== null && typeof value === 'object') throw new JsonTooDeepError(path);
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw new NotLosslessJsonError(path, `${value} has no JSON form`);
      if (Object.is(value, -0)) throw new NotLosslessJsonError(path, '-0 would become 0');
      return value;
    case 'object':
      break;
    default:
      throw new NotLosslessJsonError(path, `a ${typeof value} has no JSON form`);
  }
  if (value === null) return null;
  if (ancestors.has(value)) throw new NotLosslessJsonError(path, 'it contains a cycle');
  ancestors.add(value);
  try {
    if (Array.isArray(value)) {
      const keys = Reflect.ownKeys(value);
      if (keys.length !== value.length + 1) {
        throw new NotLosslessJsonError(path, 'an array with holes or extra properties');
      }
      const out: Json[] = [];
      for (let i = 0; i < value.length; i++) {
        out.push(copy(readOwn(value, String(i), path), `${path}[${i}]`, ancestors));
      }
      return Object.freeze(out) as Json;
    }
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      const name = proto?.constructor?.name ?? 'unknown';
      throw new NotLosslessJsonError(path, `an instance of ${name}, not a plain object`);
    }
    const out: { [k: string]: Json } = {};
    for (const key of Reflect.ownKeys(value)) {
      if (typeof key === 'symbol') throw new NotLosslessJsonError(path, `symbol key ${String(key)}`);
      // defineProperty, not assignment: a "__proto__" key must stay a plain own property, never
      // become the copy's prototype (which would smuggle fields past the digest and the card).
      Object.defineProperty(out, key, {
        value: copy(readOwn(value, key, path), path ? `${path}.${key}` : key, ancestors),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return Object.freeze(out);
  } finally {
    ancestors.delete(value);
  }
}

function readOwn(obj: object, key: string, path: string): unknown {
  const desc = Object.getOwnPropertyDescriptor(obj, key);
  if (!desc) return undefined;
  if (!('value' in desc)) throw new NotLosslessJsonError(path ? `${path}.${key}` : key, 'a getter/setter property');
  return desc.value;
}

/** Parses a model's argument string into a frozen, lossless JSON object. */
export function snapshotArguments(raw: string): { [k: string]: Json } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    throw new NotLosslessJsonError('arguments', `not valid JSON (${(err as Error).message})`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new NotLosslessJsonError('arguments', 'must be a JSON object');
  }
  return snapshotJson(parsed, 'arguments') as { [k: string]: Json };
}

/**
 * True when a plain JSON value (one that came out of JSON.parse) nests deeper than `max`. Walks
 * without recursion, so it is safe on any input.
 */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  const seen = new Set<object>();
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object' || seen.has(v)) continue;
    if (depth >= max) return true;
    seen.add(v);
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

/** JSON with object keys sorted, so equal values always give equal strings (and digests). */
export function canonicalJson(value: Json): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
}

/**
 * Sets an own property whatever the key: keys from models (paths, names) may be "__proto__",
 * which plain assignment would turn into a prototype change instead of an entry.
 */
export function setOwn<T>(obj: { [k: string]: T }, key: string, value: T): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

/** The own entry under a key, never an inherited one. */
export function getOwn<T>(obj: { [k: string]: T }, key: string): T | undefined {
  return Object.hasOwn(obj, key) ? obj[key] : undefined;
}

/** Deep-freezes a JSON value in place. */
export function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
