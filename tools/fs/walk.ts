// Walks a folder of the workspace the way a developer sees it: `.git` and whatever the
// .gitignore files say to ignore are left out, and symbolic links never lead outside the root.
import ignore, { type Ignore } from 'ignore';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { ToolErrorCodes, ToolFailure } from '../errors';
import { readRefusedByRule } from './protect';
import { leavesBase, type Workspace, type WorkspacePath } from './workspace';

export interface WalkEntry {
  /** Where to read it: for a linked file, the link's real target. */
  abs: string;
  /** Workspace-relative, `/`-separated: what the model sees and passes back. */
  rel: string;
  isDir: boolean;
}

interface Layer {
  /** The workspace-relative folder the .gitignore sits in ('.' for the root). */
  dir: string;
  rules: Ignore;
}

interface WalkResult {
  entries: AsyncGenerator<WalkEntry>;
  /** Set once the walk gave up after visiting maxEntries entries. */
  readonly stoppedEarly: boolean;
}

/** Every file and folder under `base` (itself excluded), in path order, not descending into ignored folders. */
export function walk(ws: Workspace, base: { abs: string; rel: string }, maxEntries: number): WalkResult {
  const state = { stoppedEarly: false };
  async function* entries(): AsyncGenerator<WalkEntry> {
    let layers = await layersAbove(ws, base.rel);
    // A folder asked for by name is searched even when it is ignored (as ripgrep does); only
    // the .gitignore files inside it then apply.
    if (isIgnored(layers, base.rel, true)) layers = [];
    let visited = 0;
    const stack: { abs: string; rel: string; layers: Layer[] }[] = [{ abs: base.abs, rel: base.rel, layers }];
    while (stack.length) {
      const dir = stack.pop()!;
      let names;
      try {
        names = (await fs.readdir(dir.abs, { withFileTypes: true })).sort((a, b) =>
          a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
        );
      } catch {
        continue; // unreadable or vanished meanwhile: nothing to show from it
      }
      const local = names.some((d) => d.name === '.gitignore' && d.isFile())
        ? [...dir.layers, await layerAt(path.join(dir.abs, '.gitignore'), dir.rel)]
        : dir.layers;
      const subdirs: typeof stack = [];
      for (const d of names) {
        if (d.name === '.git') continue;
        if (++visited > maxEntries) {
          state.stoppedEarly = true;
          return;
        }
        const abs = path.join(dir.abs, d.name);
        const rel = dir.rel === '.' ? d.name : `${dir.rel}/${d.name}`;
        if (ws.protection.why(abs)) continue; // not listed, not searched
        let isDir = d.isDirectory();
        let readFrom = abs;
        if (d.isSymbolicLink()) {
          const target = await linkTarget(ws, abs);
          if (!target) continue;
          if (target.isDir) {
            // Listed, never followed: a linked folder could loop or duplicate the tree.
            if (!isIgnored(local, rel, true)) yield { abs: target.abs, rel, isDir: true };
            continue;
          }
          readFrom = target.abs;
          isDir = false;
        } else if (!isDir && !d.isFile()) {
          continue; // sockets, fifos, devices: nothing to read
        }
        if (isIgnored(local, rel, isDir)) continue;
        yield { abs: readFrom, rel, isDir };
        if (isDir) subdirs.push({ abs, rel, layers: local });
      }
      stack.push(...subdirs.reverse());
    }
  }
  return {
    entries: entries(),
    get stoppedEarly() {
      return state.stoppedEarly;
    },
  };
}

/**
 * Why a permission rule refuses reading this entry (tools/fs/protect.ts, readRefusedByRule),
 * checked under every spelling a rule may use: below the root as configured, below the real
 * root, and where a link leads.
 */
export function refusedByReadRule(ws: Workspace, e: { abs: string; rel: string }): string | undefined {
  const rel = e.rel === '.' ? '' : e.rel;
  const spellings = [...new Set([path.join(ws.root, rel), path.join(ws.realRoot, rel), e.abs])];
  return readRefusedByRule(spellings);
}

/** Whether a search starts at a file or a folder; a missing start is the model's to fix. */
export async function searchStart(base: WorkspacePath): Promise<'file' | 'folder'> {
  const stat = await fs.stat(base.abs).catch(() => undefined);
  if (!stat)
    throw new ToolFailure(
      `${base.rel} does not exist. Check the path (glob with pattern "*" lists the workspace root).`,
      ToolErrorCodes.FS_NOT_FOUND,
    );
  return stat.isDirectory() ? 'folder' : 'file';
}

/** The later (deeper) .gitignore decides, as in git; `!pattern` re-includes. */
function isIgnored(layers: Layer[], rel: string, isDir: boolean): boolean {
  let ignored = false;
  for (const layer of layers) {
    const sub = layer.dir === '.' ? rel : rel.startsWith(`${layer.dir}/`) ? rel.slice(layer.dir.length + 1) : undefined;
    if (!sub) continue;
    const r = layer.rules.test(isDir ? `${sub}/` : sub);
    if (r.ignored) ignored = true;
    else if (r.unignored) ignored = false;
  }
  return ignored;
}

/** The .gitignore files of the folders above the one a walk starts in, root first. */
async function layersAbove(ws: Workspace, rel: string): Promise<Layer[]> {
  const dirs =
    rel === '.'
      ? []
      : [
          '.',
          ...rel
            .split('/')
            .slice(0, -1)
            .map((_, i, parts) => parts.slice(0, i + 1).join('/')),
        ];
  const layers: Layer[] = [];
  for (const dir of dirs) {
    const file = path.join(ws.realRoot, dir, '.gitignore');
    if (
      await fs.stat(file).then(
        (s) => s.isFile(),
        () => false,
      )
    )
      layers.push(await layerAt(file, dir));
  }
  return layers;
}

async function layerAt(file: string, dir: string): Promise<Layer> {
  const text = await fs.readFile(file, 'utf8').catch(() => '');
  return { dir, rules: ignore().add(text) };
}

async function linkTarget(ws: Workspace, abs: string): Promise<{ abs: string; isDir: boolean } | undefined> {
  try {
    const real = await fs.realpath(abs);
    if (leavesBase(path.relative(ws.realRoot, real)) || ws.protection.why(real)) return undefined;
    return { abs: real, isDir: (await fs.stat(real)).isDirectory() };
  } catch {
    return undefined; // dangling
  }
}
