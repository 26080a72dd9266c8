// The cards a call gets when its tool draws none: kept apart from the stage contracts so the batch
// output's packing (codec/output.ts) can leave a generic card out without importing them.
import type { Card, JsonObject } from './types';

/** The completed card when a tool has no presentResult, or it throws or returns nonsense. */
export function genericResultCard(name: string, isError: boolean): Card {
  return { title: name, summary: isError ? 'failed' : 'done' };
}

/** The card any UI shows when a tool's presentCall is missing, throws or returns nonsense. */
export function genericCard(name: string, args: JsonObject): Card {
  return { title: name, fields: args };
}
