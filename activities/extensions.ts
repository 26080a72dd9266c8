// The one loop every stage runs its extensions with: in config order, each under its display
// name (`<kind> <name>`, also the source of the contexts it adds), until one says stop or throws.
import { nameOf } from '../define/config';

/** What a step tells the chain: go on to the next extension, or stop here. */
type Step = 'next' | 'stop';

/** The extension that threw, by its display name, and what it threw. */
interface Threw {
  who: string;
  error: unknown;
}

/**
 * Runs `step` for each extension in order. A throw out of a step stops the chain and is returned
 * (the caller maps it to its stage's outcome); a step that must survive its extension's throws
 * (the tools/result observers) catches them itself.
 */
export async function runInOrder<E>(
  extensions: readonly E[] | undefined,
  kind: string,
  step: (extension: E, who: string) => Promise<Step> | Step,
  source?: { withSource(who: string): void },
): Promise<Threw | undefined> {
  for (const [i, ext] of (extensions ?? []).entries()) {
    const who = `${kind} ${nameOf(ext as never, `#${i}`)}`;
    source?.withSource(who);
    try {
      if ((await step(ext, who)) === 'stop') return undefined;
    } catch (error) {
      return { who, error };
    }
  }
  return undefined;
}

/** `<who> threw: <message>`: how a throwing extension reads in the call's result. */
export function threwMessage(t: Threw): string {
  return `${t.who} threw: ${messageOf(t.error)}`;
}

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
