// Read-before-edit. What a session has observed of each file lives in its session state
// (namespace `fs`, keyed by workspace-relative path), so it spans batches and worker restarts
// and no two sessions share it. Versions are content hashes, never mtimes: a file rewritten
// within the same second, or touched without changing, is judged by what it holds.
//
// Whether a write or edit may go ahead is asked through two extension points, `fs/write-intent`
// and `fs/edit-intent`. The ledger policies below are the defaults; a user may replace or wrap
// them (see docs/tools.md).
import { createHash } from 'node:crypto';
import { ErrorCodes } from '../../pipeline/errors';
import type { Json } from '../../pipeline/types';
import type { ToolContext } from '../../define/config';
import { ToolErrorCodes } from '../errors';

export const FS_STATE_NAMESPACE = 'fs';

export interface Observation {
  state: 'present' | 'absent';
  /** `sha256:<hex>` of the file's bytes when it was observed present. */
  version?: string;
  /** Only part of the file was seen (a paged read): enough to edit, not to overwrite it whole. */
  partial: boolean;
}

/** What is on disk right now. */
export type DiskState = { state: 'present'; version: string } | { state: 'absent' };

export function versionOf(bytes: Buffer | string): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

/** This session's observation of a path, if any (malformed entries count as none). */
export function observationOf(ctx: Pick<ToolContext, 'state'>, rel: string): Observation | undefined {
  const raw = ctx.state[FS_STATE_NAMESPACE]?.[rel] as
    | { state?: unknown; version?: unknown; partial?: unknown }
    | undefined;
  if (!raw || typeof raw !== 'object') return undefined;
  if (raw.state === 'absent') return { state: 'absent', partial: false };
  if (raw.state === 'present' && typeof raw.version === 'string')
    return { state: 'present', version: raw.version, partial: raw.partial === true };
  return undefined;
}

/** Records an observation: session state for later calls, and an `fs/observed` event for the log. */
export function recordObservation(ctx: Pick<ToolContext, 'setState' | 'emit'>, rel: string, obs: Observation): void {
  const entry: { [k: string]: Json } = { state: obs.state, partial: obs.partial };
  if (obs.state === 'present' && obs.version) entry.version = obs.version;
  ctx.setState(FS_STATE_NAMESPACE, rel, entry);
  ctx.emit('fs/observed', { path: rel, ...entry });
}

interface IntentBase {
  /** Workspace-relative path (the ledger key). */
  path: string;
  /** The real absolute location that would be written. */
  absolutePath: string;
  current: DiskState;
  /** What this session last observed of the path; undefined when never observed. */
  observed?: Observation;
  ctx: ToolContext;
}
export interface WriteIntent extends IntentBase {
  tool: 'write';
  args: { file_path: string; content: string };
}
export interface EditIntent extends IntentBase {
  tool: 'edit';
  args: { file_path: string; old_string: string; new_string: string; replace_all?: boolean };
}

/** An intent policy's answer; a denial's message is what the model reads, so say what to do next. */
export type IntentDecision = { kind: 'allow' } | { kind: 'deny'; code: string; message: string };
export type WriteIntentPolicy = (intent: WriteIntent) => IntentDecision | Promise<IntentDecision>;
export type EditIntentPolicy = (intent: EditIntent) => IntentDecision | Promise<IntentDecision>;

const ALLOW: IntentDecision = { kind: 'allow' };

/**
 * Default `fs/write-intent`: creating a file is always allowed; replacing an existing one needs
 * a whole-file observation of exactly the bytes on disk.
 */
export const ledgerWriteIntent: WriteIntentPolicy = ({ path, current, observed }) => {
  if (current.state === 'absent') return ALLOW;
  if (!observed) {
    return deny(
      ToolErrorCodes.FS_NOT_OBSERVED,
      `${path} already exists and you have not read it in this session. Read the whole file first, then write it (or use edit to change part of it).`,
    );
  }
  if (observed.state === 'absent') {
    return deny(
      ToolErrorCodes.FS_STALE_VERSION,
      `${path} did not exist when you last looked, but it has been created since. Read it, then decide whether to overwrite it.`,
    );
  }
  if (observed.version !== current.version) {
    return deny(
      ToolErrorCodes.FS_STALE_VERSION,
      `${path} has changed since you last read it. Read the file again, then retry the write with its current content in mind.`,
    );
  }
  if (observed.partial) {
    return deny(
      ToolErrorCodes.FS_NOT_OBSERVED,
      `you have read only part of ${path}, which is not enough to overwrite it whole. Read the whole file (no offset/limit), or use edit to change the part you read.`,
    );
  }
  return ALLOW;
};

/**
 * Default `fs/edit-intent`: the file must have been observed present at exactly the version on
 * disk. A paged read is enough: edit replaces text the model quotes, not the whole file.
 */
export const ledgerEditIntent: EditIntentPolicy = ({ path, current, observed }) => {
  if (!observed) {
    return deny(
      ToolErrorCodes.FS_NOT_OBSERVED,
      `you have not read ${path} in this session. Read the file first, then retry the edit.`,
    );
  }
  if (observed.state === 'absent') {
    return current.state === 'absent'
      ? deny(
          ToolErrorCodes.FS_NOT_FOUND,
          `${path} does not exist, so there is nothing to edit. Use write to create it, or check the path with glob.`,
        )
      : deny(
          ToolErrorCodes.FS_STALE_VERSION,
          `${path} did not exist when you last looked, but it has been created since. Read the file, then retry the edit.`,
        );
  }
  if (current.state === 'absent') {
    return deny(
      ToolErrorCodes.FS_NOT_FOUND,
      `${path} was deleted after you read it. Check with glob whether it moved; use write to create it again.`,
    );
  }
  if (observed.version !== current.version) {
    return deny(
      ToolErrorCodes.FS_STALE_VERSION,
      `${path} has changed since you last read it. Read the file again, then retry the edit.`,
    );
  }
  return ALLOW;
};

function deny(code: string, message: string): IntentDecision {
  return { kind: 'deny', code, message };
}

/** Asks a policy, failing closed: a throw or a malformed answer denies. */
export async function askIntent<I extends WriteIntent | EditIntent>(
  point: string,
  policy: (intent: I) => IntentDecision | Promise<IntentDecision>,
  intent: I,
): Promise<IntentDecision> {
  let answer: unknown;
  try {
    answer = await policy(intent);
  } catch (err) {
    return deny(
      ToolErrorCodes.PIPELINE_FAILED,
      `the ${point} policy failed (${err instanceof Error ? err.message : String(err)}), so ${intent.path} was left unchanged.`,
    );
  }
  const a = answer as { kind?: unknown; code?: unknown; message?: unknown } | null;
  if (a?.kind === 'allow') return ALLOW;
  if (a?.kind === 'deny' && typeof a.message === 'string' && a.message.trim()) {
    return deny(typeof a.code === 'string' && a.code ? a.code : ErrorCodes.DENIED, a.message);
  }
  return deny(
    ToolErrorCodes.PIPELINE_FAILED,
    `the ${point} policy returned neither {kind:'allow'} nor {kind:'deny', code, message}, so ${intent.path} was left unchanged.`,
  );
}
