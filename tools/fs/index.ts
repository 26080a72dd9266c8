// tool-fs: read, write, edit, glob and grep, confined to one workspace root, with
// read-before-edit kept in each session's ledger.
import type { ToolDefinition } from '../../define/config';
import { editTool } from './edit';
import { globTool, SEARCH_DEFAULTS, type SearchLimits } from './glob';
import { grepTool } from './grep';
import { ledgerEditIntent, ledgerWriteIntent, type EditIntentPolicy, type WriteIntentPolicy } from './ledger';
import { READ_DEFAULTS, readTool, type ReadLimits } from './read';
import type { ProtectOptions } from './protect';
import { openWorkspace } from './workspace';
import { writeTool } from './write';

export interface FsToolsOptions {
  /** The workspace root; no file tool reaches outside it. Resolved when a call runs. */
  root: string;
  /** The `fs/write-intent` policy; default ledgerWriteIntent. Wrap it to add rules. */
  writeIntent?: WriteIntentPolicy;
  /** The `fs/edit-intent` policy; default ledgerEditIntent. */
  editIntent?: EditIntentPolicy;
  read?: Partial<ReadLimits>;
  search?: Partial<SearchLimits>;
  /** write and edit refuse files larger than this (they hold the whole file in memory). Default 10 MiB. */
  maxFileBytes?: number;
  /**
   * Paths no tool may read or change (FS_PROTECTED_PATH). Default: folders named .claude, .codex,
   * .gemini and .sluice anywhere, and the scripts the hook settings in the root run. Sluice's own
   * state folder stays protected whatever this says. See tools/fs/protect.ts.
   */
  protect?: ProtectOptions | false;
  /** Files with more than one hard link: 'refuse' (default, FS_HARD_LINK) or 'allow'. */
  hardLinks?: 'refuse' | 'allow';
}

export function fsTools(opts: FsToolsOptions): ToolDefinition[] {
  if (typeof opts?.root !== 'string' || !opts.root)
    throw new Error('fsTools needs a workspace root: fsTools({ root: "path/to/workspace" })');
  const workspace = () => openWorkspace(opts.root, { protect: opts.protect, hardLinks: opts.hardLinks });
  const maxFileBytes = opts.maxFileBytes ?? 10 * 1024 * 1024;
  const search = { ...SEARCH_DEFAULTS, ...opts.search };
  return [
    readTool(workspace, { ...READ_DEFAULTS, ...opts.read }),
    writeTool(workspace, opts.writeIntent ?? ledgerWriteIntent, maxFileBytes),
    editTool(workspace, opts.editIntent ?? ledgerEditIntent, maxFileBytes),
    globTool(workspace, search),
    grepTool(workspace, search),
  ];
}

export { DEFAULT_PROTECTED_NAMES, protectStateDir, type ProtectOptions } from './protect';
export { ledgerEditIntent, ledgerWriteIntent, observationOf, versionOf, FS_STATE_NAMESPACE } from './ledger';
export type {
  DiskState,
  EditIntent,
  EditIntentPolicy,
  IntentDecision,
  Observation,
  WriteIntent,
  WriteIntentPolicy,
} from './ledger';
