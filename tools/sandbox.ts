// Where a bash command runs. With bubblewrap (Debian's `bubblewrap` package) it gets a sandbox
// like Codex's workspace-write mode: its own PID namespace (when the shell exits or is killed,
// the kernel ends every process in it, `setsid -f` ones included), the workspace writable, the
// rest of the file system read-only, a private /tmp and /proc, no capabilities, no network unless
// allowed, hook settings and scripts read-only, Sluice's state folders hidden. Without it, the
// command runs in its own process group, and a marker in its environment finds what left the
// group (see runInGroup).
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { STATE_NAME } from './fs/protect';
import type { Workspace } from './fs/workspace';

export type SandboxSetting = 'auto' | 'bubblewrap' | 'none';
type SandboxMode = 'bubblewrap' | 'process-group';

let probe: Promise<string | undefined> | undefined;

/** Why bubblewrap cannot run here, or undefined when it can (tried once per process). */
function bubblewrapUnavailable(): Promise<string | undefined> {
  probe ??= new Promise((resolve) => {
    // With the status descriptor every call uses (bash.ts), so a bwrap without it is found here.
    const args = [...BASE_ARGS, '--unshare-net', '--json-status-fd', '1', '--', 'true'];
    execFile('bwrap', args, { timeout: 10_000 }, (err, _out, stderr) =>
      resolve(err ? (stderr.trim() || err.message).split('\n')[0] : undefined),
    );
  });
  return probe;
}

/** What every sandbox has: the file system read-only, fresh /dev, /proc and /tmp, its own PID, IPC and UTS namespaces. */
const BASE_ARGS = [
  '--ro-bind',
  '/',
  '/',
  '--dev',
  '/dev',
  '--proc',
  '/proc',
  '--tmpfs',
  '/tmp',
  '--unshare-pid',
  '--unshare-ipc',
  '--unshare-uts',
  '--unshare-cgroup-try',
  '--die-with-parent',
  '--new-session',
  // A worker running as root would otherwise keep its capabilities inside, and could remount.
  '--cap-drop',
  'ALL',
];

/**
 * The sandboxes of this process running in each workspace, and the stand-ins they made there and
 * nobody has removed yet. A workspace's sandboxes share its stand-ins: they are removed only when
 * the last one ends, and a sandbox treats one as the absent folder it stands for, not as a folder
 * the workspace has. (Before, one command's cleanup removed a stand-in another command's bwrap
 * was about to mount on, and that command never ran; and a command that started while a stand-in
 * existed left it behind.)
 */
const workspaces = new Map<string, SandboxesIn>();

interface SandboxesIn {
  running: number;
  /** Stand-ins made, by their name in the workspace. */
  made: Set<string>;
}

/**
 * Runs bwrap as one of the workspace's sandboxes: `run` gets a function that builds bwrap's
 * arguments (up to and excluding `--`) as the workspace is at that moment, once per attempt;
 * the stand-ins are removed when the last sandbox of the workspace has ended.
 */
export async function inSandbox<T>(
  ws: Workspace,
  o: { network: boolean; writable: string[] },
  run: (args: () => string[]) => Promise<T>,
): Promise<T> {
  const root = ws.realRoot;
  const here = workspaces.get(root) ?? { running: 0, made: new Set<string>() };
  workspaces.set(root, here);
  here.running++;
  try {
    return await run(() => bubblewrapArgs(ws, o, here.made));
  } finally {
    here.running--;
    await removeStandIns(root, here);
  }
}

/** bwrap's arguments for one command, up to and excluding `--`. */
function bubblewrapArgs(ws: Workspace, o: { network: boolean; writable: string[] }, made: Set<string>): string[] {
  const args = [...BASE_ARGS];
  if (!o.network) args.push('--unshare-net');
  for (const dir of [ws.realRoot, ...o.writable]) args.push('--bind', dir, dir);
  const p = ws.protection;
  for (const ro of p.readOnly)
    if (fs.existsSync(ro) && !made.has(path.relative(ws.realRoot, ro))) args.push('--ro-bind', ro, ro);
  // A hook folder that does not exist must not be created either: an empty read-only one stands
  // in its place for the command's lifetime. Looked at now, not when the workspace was opened.
  for (const name of p.names) {
    if (name === STATE_NAME) continue;
    const at = path.join(ws.realRoot, name);
    if (made.has(name) || !fs.existsSync(at)) {
      made.add(name);
      args.push('--tmpfs', at, '--remount-ro', at);
    } else if (!p.readOnly.includes(at)) args.push('--ro-bind', at, at);
  }
  for (const dir of p.hidden)
    if (fs.existsSync(dir) && !ws.realRoot.startsWith(`${dir}${path.sep}`)) args.push('--tmpfs', dir);
  args.push('--chdir', ws.realRoot);
  return args;
}

/**
 * bwrap leaves the mount points it made for absent hook folders behind: remove them if still
 * empty, unless a sandbox of this process runs in the workspace again. After a kill the sandbox's
 * mounts may outlive bwrap for a moment (EBUSY): retry briefly.
 */
async function removeStandIns(root: string, here: SandboxesIn): Promise<void> {
  for (const name of here.made) {
    for (let attempt = 0; attempt < 40; attempt++) {
      // Checked before every attempt: a sandbox may have started while this one waited.
      if (here.running > 0) return;
      try {
        fs.rmdirSync(path.join(root, name));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EBUSY') {
          await new Promise((r) => setTimeout(r, 50));
          continue;
        }
        // ENOTEMPTY: someone made it a folder of their own meanwhile; ENOENT: already gone.
      }
      here.made.delete(name);
      break;
    }
  }
  // A sandbox that starts after this finds no entry and makes its own.
  if (here.running === 0 && here.made.size === 0 && workspaces.get(root) === here) workspaces.delete(root);
}

/** The mode a call runs in, or why the required sandbox is missing. */
export async function sandboxMode(setting: SandboxSetting): Promise<SandboxMode> {
  if (setting === 'none') return 'process-group';
  const why = await bubblewrapUnavailable();
  if (!why) return 'bubblewrap';
  if (setting === 'bubblewrap')
    throw new Error(
      `bashTool({ sandbox: 'bubblewrap' }) needs bubblewrap, which cannot run here (${why}). Install it (Debian: apt-get install bubblewrap) and allow unprivileged user namespaces, or use sandbox: 'auto'.`,
    );
  return 'process-group';
}
