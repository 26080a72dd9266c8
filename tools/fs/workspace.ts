// Confinement: every path a file tool touches resolves to a real location inside the workspace
// root. Checked lexically first (`..`, absolute paths), then through the file system, so a
// symbolic link at any depth that leads out of the root is refused too.
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { ToolErrorCodes, ToolFailure } from '../errors';
import { protection, type ProtectOptions, type Protection } from './protect';

export interface Workspace {
  /** The root as configured, made absolute. */
  readonly root: string;
  /** The root with every symbolic link resolved: what containment is checked against. */
  readonly realRoot: string;
  /** What no tool may touch inside the root (tools/fs/protect.ts). */
  readonly protection: Protection;
  /** Whether files with more than one hard link may be read and changed (default: refused). */
  readonly allowHardLinks: boolean;
}

interface WorkspaceOptions {
  /** Paths no tool may touch; `false` leaves only Sluice's state folder protected. */
  protect?: ProtectOptions | false;
  /** 'refuse' (default): a file with several hard links may have a name outside the workspace. */
  hardLinks?: 'refuse' | 'allow';
}

export interface WorkspacePath {
  /** The real absolute location (links resolved); for a path that does not exist yet, its real parent plus the missing rest. */
  readonly abs: string;
  /** The ledger key and the name shown to the model: relative to the root, `/`-separated, `.` for the root itself. */
  readonly rel: string;
}

export async function openWorkspace(root: string, opts: WorkspaceOptions = {}): Promise<Workspace> {
  const abs = path.resolve(root);
  try {
    const realRoot = await fs.realpath(abs);
    if (!(await fs.stat(realRoot)).isDirectory()) throw new Error('not a directory');
    return {
      root: abs,
      realRoot,
      protection: protection(realRoot, opts.protect),
      allowHardLinks: opts.hardLinks === 'allow',
    };
  } catch (err) {
    // The operator's mistake, not the model's: say so, and don't let Temporal retry it.
    throw new ToolFailure(
      `the workspace root ${abs} is not a usable directory (${(err as Error).message}); the file tools cannot run until whoever runs Sluice fixes their root.`,
      ToolErrorCodes.TOOL_FAILED,
    );
  }
}

/** Resolves a model-given path (relative to the root, or absolute inside it) or fails saying why. */
export async function resolveInWorkspace(ws: Workspace, input: string): Promise<WorkspacePath> {
  const outside = (why: string) =>
    new ToolFailure(
      `${JSON.stringify(input)} ${why}. Give a path inside the workspace, relative to its root (or absolute under ${ws.root}).`,
      ToolErrorCodes.FS_OUTSIDE_WORKSPACE,
    );
  if (input.includes('\0')) throw outside('contains a NUL character');
  if (input.split(/[\\/]+/).includes('..')) throw outside("contains '..', which is not allowed in workspace paths");
  if (input === '~' || input.startsWith('~/')) throw outside('starts with ~, a home directory outside the workspace');

  let inside: string;
  if (path.isAbsolute(input)) {
    const under = [ws.root, ws.realRoot]
      .map((base) => path.relative(base, path.normalize(input)))
      .find((r) => !leavesBase(r));
    if (under === undefined) throw outside(`is outside the workspace root ${ws.root}`);
    inside = path.join(ws.realRoot, under);
  } else {
    inside = path.join(ws.realRoot, input);
  }

  // By the name the model gave as well as by the real location: a protected folder may be a link.
  const guarded = ws.protection.why(inside);
  if (guarded) throw protectedPath(input, guarded);
  const real = await realLocation(inside, outside);
  const rel = path.relative(ws.realRoot, real);
  if (leavesBase(rel)) throw outside('leads outside the workspace root through a symbolic link');
  const why = ws.protection.why(real);
  if (why) throw protectedPath(input, why);
  return { abs: real, rel: rel === '' ? '.' : rel.split(path.sep).join('/') };
}

export function protectedPath(input: string, why: string): ToolFailure {
  return new ToolFailure(
    `${JSON.stringify(input)} ${why}; the built-in tools may not read or change it. Whoever runs Sluice can lift this with fsTools({ protect }).`,
    ToolErrorCodes.FS_PROTECTED_PATH,
  );
}

/** The path with all links resolved; a missing tail is appended to its deepest existing ancestor. */
async function realLocation(p: string, outside: (why: string) => Error): Promise<string> {
  const missing: string[] = [];
  let cur = p;
  for (;;) {
    try {
      return path.join(await fs.realpath(cur), ...missing);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
    }
    // A link whose target is missing: writing through it would create a file wherever it points.
    const isLink = await fs.lstat(cur).then(
      (s) => s.isSymbolicLink(),
      () => false,
    );
    if (isLink) throw outside(`goes through the symbolic link ${cur}, whose target does not exist`);
    const parent = path.dirname(cur);
    if (parent === cur) return p;
    missing.unshift(path.basename(cur));
    cur = parent;
  }
}

/** Whether a path.relative() result points outside its base (a name like `..foo` does not). */
export function leavesBase(rel: string): boolean {
  return rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel);
}
