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
import type { Workspace } from './fs/workspace';

export type SandboxSetting = 'auto' | 'bubblewrap' | 'none';
export type SandboxMode = 'bubblewrap' | 'process-group';

let probe: Promise<string | undefined> | undefined;

/** Why bubblewrap cannot run here, or undefined when it can (tried once per process). */
export function bubblewrapUnavailable(): Promise<string | undefined> {
  probe ??= new Promise((resolve) => {
    execFile('bwrap', [...BASE_ARGS, '--unshare-net', '--', 'true'], { timeout: 10_000 }, (err, _out, stderr) =>
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

/** bwrap's arguments for one command, up to and excluding `--`. */
export function bubblewrapArgs(ws: Workspace, o: { network: boolean; writable: string[] }): string[] {
  const args = [...BASE_ARGS];
  if (!o.network) args.push('--unshare-net');
  for (const dir of [ws.realRoot, ...o.writable]) args.push('--bind', dir, dir);
  const p = ws.protection;
  for (const ro of p.readOnly) if (fs.existsSync(ro)) args.push('--ro-bind', ro, ro);
  // A hook folder that does not exist yet must not be created either: an empty read-only one
  // stands in its place for the command's lifetime.
  for (const name of p.absent) {
    const at = path.join(ws.realRoot, name);
    args.push('--tmpfs', at, '--remount-ro', at);
  }
  for (const dir of p.hidden)
    if (fs.existsSync(dir) && !ws.realRoot.startsWith(`${dir}${path.sep}`)) args.push('--tmpfs', dir);
  args.push('--chdir', ws.realRoot);
  return args;
}

/**
 * bwrap leaves the mount points it made for absent hook folders behind: remove them if still
 * empty. After a kill the sandbox's mounts may outlive bwrap for a moment (EBUSY): retry briefly.
 */
export async function removeStandIns(ws: Workspace): Promise<void> {
  for (const name of ws.protection.absent) {
    for (let attempt = 0; attempt < 40; attempt++) {
      try {
        fs.rmdirSync(path.join(ws.realRoot, name));
        break;
      } catch (err) {
        // Not empty (someone made it meanwhile), or already gone: leave it.
        if ((err as NodeJS.ErrnoException).code !== 'EBUSY') break;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }
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
