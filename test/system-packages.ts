// What the test run needs from the system besides npm: Chromium (the inbox browser tests; Playwright's
// own download is not used), bubblewrap (the bash sandbox's tests), strace (the differential test of
// the Bash judgment traces what each command executes) and PostgreSQL (the shared stores).
// On a fresh machine the test setup installs the missing ones with apt-get when it runs as root;
// otherwise it says in one line which command installs them. From PyPI: Dogwood's reference
// interpreter (dogwood-py), which the Dogwood tests run in a helper process, kept in
// .sluice/python beside the Temporal CLI and put on PYTHONPATH for the run.
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

interface Need {
  pkg: string;
  present(): boolean;
}

const onPath = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;

const NEEDS: Need[] = [
  {
    pkg: 'chromium',
    present: () => !!process.env.CHROMIUM_PATH || onPath('chromium') || onPath('chromium-browser'),
  },
  { pkg: 'bubblewrap', present: () => onPath('bwrap') },
  { pkg: 'strace', present: () => onPath('strace') },
  {
    pkg: 'postgresql',
    present: () => {
      const root = '/usr/lib/postgresql';
      return (
        fs.existsSync(root) && fs.readdirSync(root).some((v) => fs.existsSync(path.join(root, v, 'bin', 'initdb')))
      );
    },
  },
];

/** Installs what is missing when it can (root with apt-get); returns what is still missing. */
export function provisionSystemPackages(log: (line: string) => void): string[] {
  const missing = NEEDS.filter((n) => !n.present()).map((n) => n.pkg);
  if (!missing.length) return [];
  const root = process.getuid?.() === 0;
  if (root && onPath('apt-get')) {
    log(`test setup: installing ${missing.join(', ')} with apt-get (first run on this machine) ...`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    try {
      execFileSync('apt-get', ['update', '-qq'], { env, stdio: 'ignore' });
      execFileSync('apt-get', ['install', '-y', '-qq', ...missing], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    } catch (err) {
      const stderr = String((err as { stderr?: Buffer }).stderr ?? '').trim();
      log(
        `test setup: apt-get could not install ${missing.join(' ')}: ${stderr.split('\n').pop() || (err as Error).message}`,
      );
    }
    const still = NEEDS.filter((n) => missing.includes(n.pkg) && !n.present()).map((n) => n.pkg);
    if (!still.length) return [];
    missing.splice(0, missing.length, ...still);
  }
  log(
    `test setup: ${missing.join(', ')} missing; the tests that need ${missing.length > 1 ? 'them' : 'it'} will fail. Install with: ${root ? '' : 'sudo '}apt-get install -y ${missing.join(' ')}`,
  );
  return missing;
}

/** Dogwood's reference interpreter, the version hooks/dogwood.ts is checked against. */
const DOGWOOD_PY = 'dogwood-py==0.0.12';

/**
 * Makes `import dogwood` work for the run's helper processes: the copy in .sluice/python (installed
 * there with pip when neither it nor the system's Python has one), put on PYTHONPATH.
 */
export function provisionDogwood(log: (line: string) => void): void {
  const target = path.resolve('.sluice', 'python');
  const has = (env: NodeJS.ProcessEnv) =>
    spawnSync('python3', ['-c', 'import dogwood'], { env, stdio: 'ignore' }).status === 0;
  const withTarget = {
    ...process.env,
    PYTHONPATH: [target, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter),
  };
  if (!fs.existsSync(path.join(target, 'dogwood')) && !has(process.env)) {
    log(`test setup: installing ${DOGWOOD_PY} into .sluice/python (the Dogwood tests' reference interpreter) ...`);
    const r = spawnSync(
      'python3',
      ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--target', target, DOGWOOD_PY],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    if (r.status !== 0 && !has(withTarget))
      log(
        `test setup: pip could not install ${DOGWOOD_PY} (${String(r.stderr).trim().split('\n').pop()}); the Dogwood tests will fail. Install with: python3 -m pip install ${DOGWOOD_PY}`,
      );
  }
  if (fs.existsSync(path.join(target, 'dogwood'))) process.env.PYTHONPATH = withTarget.PYTHONPATH;
}
