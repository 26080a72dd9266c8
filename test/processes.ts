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

/** Live processes whose command line contains `needle`, seen from this (the host's) PID namespace. */
export function pidsRunning(needle: string): number[] {
  const found: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0/g, ' ').includes(needle) && alive(Number(name)))
        found.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}
