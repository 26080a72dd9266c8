// Watching processes a test started, from /proc.
import * as fs from 'node:fs';

/** Live and not a zombie (a killed process whose parent has not reaped it is gone for us). */
export function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** A command that starts a tree (sleep in the shell, and in a nested shell) and writes their pids. */
export function treeCommand(pidFile: string): string {
  return `sleep 300 & echo $! > ${pidFile}; bash -c 'sleep 301 & echo $! >> ${pidFile}; wait' & echo $! >> ${pidFile}; wait`;
}

export function pidsIn(file: string): number[] {
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map(Number) : [];
}
