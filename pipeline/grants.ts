// Session grants: "allow for this session", given by a person instead of a one-time yes. A grant
// names the tool it was asked for and may carry argument pins that narrow it (each pin must hold
// for the call that was asked, so a pin can never widen what the person saw). Grants live in the
// session state under a namespace no tool can write, travel between batches with the rest of the
// state, and end with the session. Pure: the workflow and the clients both use it.
import { getOwn, setOwn } from './json';
import type { ArgumentPin, JsonObject, Json, SessionGrant, SessionState } from './types';

// The grant's shapes live with the rest of the vocabulary (types.ts), so the two files do not
// import each other; importers of grants.ts keep finding them here.
export type { ArgumentPin, SessionGrant } from './types';

/** The session-state namespace that holds the grants, by id. Bodies cannot write it. */
export const GRANTS_NAMESPACE = 'sluice.grants';
const MAX_PINS = 8;
const MAX_PIN_PATH = 200;
const MAX_PIN_VALUE_CHARS = 2000;

const SHELL_SPECIAL = /[;&|\n`<>]|\$\(/;

/** Why these pins cannot be a grant for a call with these arguments; undefined when they can. */
export function pinsProblem(pins: unknown, args: unknown): string | undefined {
  if (pins === undefined || pins === null) return undefined;
  if (!Array.isArray(pins)) return 'pins must be a list of {"path", "equals"} or {"path", "prefix"}';
  if (pins.length > MAX_PINS) return `at most ${MAX_PINS} pins per grant (got ${pins.length})`;
  for (const pin of pins) {
    const shape = pinShapeProblem(pin);
    if (shape) return shape;
    if (!pinMatches(pin as ArgumentPin, args))
      return `the pin ${describePin(pin as ArgumentPin)} does not hold for the call you were asked about: a pin can only narrow the grant to calls like this one, never widen it`;
  }
  return undefined;
}

function pinShapeProblem(pin: unknown): string | undefined {
  if (!pin || typeof pin !== 'object' || Array.isArray(pin))
    return 'each pin must be an object {"path", "equals"|"prefix"}';
  const p = pin as Record<string, unknown>;
  if (typeof p.path !== 'string' || !p.path || p.path.length > MAX_PIN_PATH)
    return 'each pin needs a "path": the argument it pins, e.g. "command" or "options.cwd"';
  const hasEquals = 'equals' in p && p.equals !== undefined;
  const hasPrefix = 'prefix' in p && p.prefix !== undefined;
  if (hasEquals === hasPrefix) return `the pin on ${p.path} needs exactly one of "equals" and "prefix"`;
  if (hasPrefix && (typeof p.prefix !== 'string' || !p.prefix.trim()))
    return `the pin on ${p.path}: "prefix" must be a non-empty string`;
  if (hasPrefix && SHELL_SPECIAL.test(p.prefix as string))
    return `the pin on ${p.path}: a prefix may not contain shell separators or substitutions`;
  if (JSON.stringify(hasPrefix ? p.prefix : p.equals).length > MAX_PIN_VALUE_CHARS)
    return `the pin on ${p.path} is longer than ${MAX_PIN_VALUE_CHARS} characters`;
  const extra = Object.keys(p).filter((k) => k !== 'path' && k !== 'equals' && k !== 'prefix');
  if (extra.length) return `the pin on ${p.path} has unknown fields: ${extra.join(', ')}`;
  return undefined;
}

/** Only the pin's own fields, so nothing else rides into the state or the events. */
export function cleanPins(pins: unknown): ArgumentPin[] {
  if (!Array.isArray(pins)) return [];
  return pins.map((p: ArgumentPin) => ({
    path: p.path,
    ...(p.prefix !== undefined ? { prefix: p.prefix } : { equals: p.equals as Json }),
  }));
}

function pinMatches(pin: ArgumentPin, args: unknown): boolean {
  const value = valueAt(args, pin.path);
  if (value === undefined) return false;
  if (pin.prefix !== undefined) {
    if (typeof value !== 'string') return false;
    const v = value.trim();
    if (SHELL_SPECIAL.test(v)) return false;
    return v === pin.prefix || v.startsWith(`${pin.prefix} `) || (pin.prefix.endsWith(' ') && v.startsWith(pin.prefix));
  }
  return canonical(value) === canonical(pin.equals as Json);
}

function describePin(pin: ArgumentPin): string {
  return pin.prefix !== undefined
    ? `${pin.path} starts with ${JSON.stringify(pin.prefix)}`
    : `${pin.path} = ${JSON.stringify(pin.equals)}`;
}

export function describeGrant(g: Pick<SessionGrant, 'toolName' | 'pins'>): string {
  return g.pins.length ? `${g.toolName} where ${g.pins.map(describePin).join(' and ')}` : `every ${g.toolName} call`;
}

/** The grants of a session, oldest first. */
export function grantsOf(state: SessionState | undefined): SessionGrant[] {
  const ns = state ? getOwn(state, GRANTS_NAMESPACE) : undefined;
  if (!ns || typeof ns !== 'object') return [];
  return Object.values(ns as JsonObject)
    .filter((g): g is JsonObject => !!g && typeof g === 'object' && !Array.isArray(g))
    .map((g) => g as unknown as SessionGrant)
    .filter((g) => typeof g.id === 'string' && typeof g.toolName === 'string' && Array.isArray(g.pins))
    .sort((a, b) => String(a.grantedAt).localeCompare(String(b.grantedAt)));
}

/** The first grant that covers this call: same tool, every pin holds. */
export function grantFor(state: SessionState | undefined, toolName: string, args: unknown): SessionGrant | undefined {
  return grantsOf(state).find((g) => grantCovers(g, toolName, args));
}

export function grantCovers(g: Pick<SessionGrant, 'toolName' | 'pins'>, toolName: string, args: unknown): boolean {
  return g.toolName === toolName && g.pins.every((p) => pinMatches(p, args));
}

/** Adds a grant to the session state (the workflow's copy; bodies cannot write the namespace). */
export function addGrant(state: SessionState, grant: SessionGrant): void {
  if (!getOwn(state, GRANTS_NAMESPACE)) setOwn(state, GRANTS_NAMESPACE, {});
  setOwn(state[GRANTS_NAMESPACE], grant.id, grant as unknown as Json);
}

function valueAt(args: unknown, path: string): unknown {
  let cur: unknown = args;
  for (const key of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    if (!Object.hasOwn(cur as object, key)) return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v);
}
