// The real harness CLIs for test/harness-cli-*.test.ts: installed from the npm registry at pinned
// versions into the git-ignored .sluice/harness-clis/, and run headless against the scripted model
// (fake-model.ts) with their tool hooks wired to `sluice hook <dialect>` (OpenCode's through the
// plugin `sluice hook install opencode` writes). Each run has a home of
// its own (HOME, CODEX_HOME, XDG folders), so nothing reads or writes the machine's own config,
// and every update check, telemetry and error report is off: only 127.0.0.1 is reachable.
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type Ran, runProcess } from '../run-process';

/** The versions tested (docs/gateway.md names them). */
export const HARNESS_CLIS = {
  claude: { pkg: '@anthropic-ai/claude-code', version: '2.1.332', bin: 'claude' },
  codex: { pkg: '@openai/codex', version: '0.171.0', bin: 'codex' },
  gemini: { pkg: '@google/gemini-cli', version: '0.61.0', bin: 'gemini' },
  opencode: { pkg: 'opencode-ai', version: '1.18.33', bin: 'opencode' },
} as const;
export type HarnessCli = keyof typeof HARNESS_CLIS;

const ROOT = path.join(__dirname, '..', '..');
const CACHE = path.join(ROOT, '.sluice', 'harness-clis');
const BIN = path.join(ROOT, 'bin', 'sluice.js');

/**
 * Installs the pinned CLIs once (a stamp file names what is there); throws saying what failed.
 * The test files of the CLIs run at once: the first takes a lock folder and installs, the others
 * wait for it to go (a lock whose process is gone is taken over).
 */
export async function installHarnessClis(): Promise<void> {
  const want = Object.values(HARNESS_CLIS).map((c) => `${c.pkg}@${c.version}`);
  fs.mkdirSync(CACHE, { recursive: true });
  const lock = path.join(CACHE, 'installing.lock');
  const deadline = Date.now() + 15 * 60_000;
  while (!installed(want)) {
    if (takeLock(lock)) {
      try {
        if (!installed(want)) await install(want);
      } finally {
        fs.rmSync(lock, { recursive: true, force: true });
      }
      return;
    }
    if (Date.now() > deadline)
      throw new Error(`the harness CLIs are still being installed into ${CACHE} after 15 minutes (${lock} is held)`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

function installed(want: string[]): boolean {
  const stamp = path.join(CACHE, 'installed.json');
  const bins = Object.values(HARNESS_CLIS).map((c) => path.join(CACHE, 'node_modules', '.bin', c.bin));
  return fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === JSON.stringify(want) && bins.every(fs.existsSync);
}

/** Takes the lock folder (its `pid` file names the holder), or takes it over from a dead holder. */
function takeLock(lock: string): boolean {
  try {
    fs.mkdirSync(lock);
    fs.writeFileSync(path.join(lock, 'pid'), String(process.pid));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const holder = Number(fs.readFileSync(path.join(lock, 'pid'), { encoding: 'utf8', flag: 'a+' }));
  // No pid yet: the holder is between its mkdir and its write; wait for it.
  if (!holder || alive(holder)) return false;
  fs.rmSync(lock, { recursive: true, force: true });
  return takeLock(lock);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function install(want: string[]): Promise<void> {
  if (!fs.existsSync(path.join(CACHE, 'package.json')))
    fs.writeFileSync(path.join(CACHE, 'package.json'), '{"private": true}\n');
  // No install scripts (Gemini CLI's dependencies would build native modules it does not need
  // here), except Claude Code's and OpenCode's, which link their native binary from the optional
  // dependency.
  const args = ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--no-save', ...want];
  await run('npm', args, CACHE, want);
  const modules = path.join(CACHE, 'node_modules');
  await run(process.execPath, ['install.cjs'], path.join(modules, '@anthropic-ai', 'claude-code'), want);
  await run(process.execPath, ['postinstall.mjs'], path.join(modules, 'opencode-ai'), want);
  fs.writeFileSync(path.join(CACHE, 'installed.json'), JSON.stringify(want));
}

function run(file: string, args: string[], cwd: string, want: string[]): Promise<void> {
  return new Promise<void>((resolve, reject) =>
    execFile(file, args, { cwd, maxBuffer: 16 * 1024 * 1024 }, (err, _out, stderr) =>
      err
        ? reject(
            new Error(
              `could not install the harness CLIs (${want.join(', ')}) into ${CACHE}: \`${path.basename(file)} ${args.join(' ')}\` failed: ${stderr.trim().split('\n').slice(-5).join('\n')}\nThese tests need the npm registry once; later runs use the cache.`,
            ),
          )
        : resolve(),
    ),
  );
}

export interface Sluice {
  address: string;
  taskQueue: string;
}

export interface RunOptions {
  /** The folder the harness works in (its project); the command runs there. */
  cwd: string;
  /** A folder of this run's own for the CLI's home and settings. */
  home: string;
  model: string;
  sluice: Sluice;
  /** `--timeout` of the deciding hooks, in seconds; the harness waits a little longer. */
  hookTimeoutS: number;
  /**
   * Codex only: the hooks in the project's .codex/hooks.json, as docs show them, the project not
   * trusted and the hooks not reviewed, run with no approvals and no sandbox: what Codex does
   * then is what a person who skipped the trust steps gets.
   */
  untrustedProjectHooks?: boolean;
}

export type { Ran };

/** `node bin/sluice.js hook <dialect> …`, as a harness's settings run it. */
function hookCommand(dialect: string, s: Sluice, timeoutS?: number): string {
  const t = timeoutS === undefined ? '' : ` --timeout ${timeoutS}`;
  return `"${process.execPath}" "${BIN}" hook ${dialect} --address ${s.address} --task-queue ${s.taskQueue}${t}`;
}

const QUIET = {
  // Claude Code
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  DISABLE_AUTOUPDATER: '1',
  DISABLE_TELEMETRY: '1',
  DISABLE_ERROR_REPORTING: '1',
  // Gemini CLI
  GEMINI_TELEMETRY_ENABLED: 'false',
  // Codex
  CODEX_DISABLE_UPDATE_CHECK: '1',
  // OpenCode: no update, no model list from the web, no plugins or language servers from npm, and
  // no reading of Claude Code's files.
  OPENCODE_DISABLE_AUTOUPDATE: '1',
  OPENCODE_DISABLE_MODELS_FETCH: '1',
  OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
  OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
  OPENCODE_DISABLE_CLAUDE_CODE: '1',
  OPENCODE_DISABLE_SHARE: '1',
  NO_COLOR: '1',
};

function baseEnv(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const k of ['PATH', 'LANG', 'TERM', 'TMPDIR']) if (process.env[k]) env[k] = process.env[k];
  return {
    ...env,
    ...QUIET,
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    XDG_DATA_HOME: path.join(home, '.local', 'share'),
    XDG_STATE_HOME: path.join(home, '.local', 'state'),
    // OpenCode installs its plugin package (@opencode-ai/plugin) with npm into each config folder
    // it reads, at every start in a fresh home: one npm cache for every run, preferred over the
    // registry, makes those installs a copy (about a third of an `opencode run`'s CPU before).
    npm_config_cache: path.join(CACHE, 'npm-cache'),
    npm_config_prefer_offline: 'true',
  };
}

/** Claude Code `-p` with the hooks in a `--settings` file; Anthropic Messages at the fake model. */
function claude(prompt: string, o: RunOptions) {
  const hook = (t?: number) => [
    {
      matcher: '*',
      hooks: [{ type: 'command', command: hookCommand('claude', o.sluice, t), timeout: o.hookTimeoutS + 30 }],
    },
  ];
  const settings = path.join(o.home, 'sluice-hooks.json');
  fs.writeFileSync(
    settings,
    JSON.stringify({
      hooks: {
        PreToolUse: hook(o.hookTimeoutS),
        PermissionRequest: hook(o.hookTimeoutS),
        PostToolUse: hook(),
        PostToolUseFailure: hook(),
      },
    }),
  );
  return {
    args: ['-p', prompt, '--settings', settings, '--output-format', 'json', '--model', 'claude-sonnet-4-5'],
    env: { ANTHROPIC_BASE_URL: o.model, ANTHROPIC_API_KEY: 'sk-fake' },
  };
}

/**
 * `codex exec` with a provider at the fake model (Responses API). `--approve-for-me` turns on
 * Codex's on-request approvals, so an escalated command is asked about in a PermissionRequest
 * hook; `--dangerously-bypass-hook-trust` stands for the person having reviewed the hooks in
 * `/hooks` (see `sluice hook doctor codex`).
 */
function codex(prompt: string, o: RunOptions) {
  const codexHome = path.join(o.home, 'codex');
  fs.mkdirSync(codexHome, { recursive: true });
  fs.writeFileSync(
    path.join(codexHome, 'config.toml'),
    [
      'model = "gpt-5.1-codex"',
      'model_provider = "fake"',
      'check_for_update_on_startup = false',
      '[analytics]',
      'enabled = false',
      '[model_providers.fake]',
      'name = "fake"',
      `base_url = "${o.model}/v1"`,
      'wire_api = "responses"',
      'env_key = "FAKE_MODEL_KEY"',
      'stream_max_retries = 0',
      'request_max_retries = 0',
    ].join('\n'),
  );
  const hook = (t?: number) => [
    {
      matcher: '*',
      hooks: [{ type: 'command', command: hookCommand('codex', o.sluice, t), timeout: o.hookTimeoutS + 30 }],
    },
  ];
  const hooksDir = o.untrustedProjectHooks ? path.join(o.cwd, '.codex') : codexHome;
  fs.mkdirSync(hooksDir, { recursive: true });
  fs.writeFileSync(
    path.join(hooksDir, 'hooks.json'),
    JSON.stringify({
      hooks: { PreToolUse: hook(o.hookTimeoutS), PermissionRequest: hook(o.hookTimeoutS), PostToolUse: hook() },
    }),
  );
  const mode = o.untrustedProjectHooks
    ? ['--dangerously-bypass-approvals-and-sandbox']
    : ['--approve-for-me', '--dangerously-bypass-hook-trust'];
  return {
    args: ['exec', '--skip-git-repo-check', ...mode, prompt],
    env: { CODEX_HOME: codexHome, FAKE_MODEL_KEY: 'sk-fake' },
  };
}

/** Gemini CLI `-p` in yolo mode (Sluice's BeforeTool is the gate); its API base at the fake model. */
function gemini(prompt: string, o: RunOptions) {
  const dir = path.join(o.home, '.gemini');
  fs.mkdirSync(dir, { recursive: true });
  const hook = (t?: number) => [
    {
      matcher: '.*',
      hooks: [{ type: 'command', command: hookCommand('gemini', o.sluice, t), timeout: (o.hookTimeoutS + 30) * 1000 }],
    },
  ];
  fs.writeFileSync(
    path.join(dir, 'settings.json'),
    JSON.stringify({
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
      general: { disableAutoUpdate: true, disableUpdateNag: true },
      security: { auth: { selectedType: 'gemini-api-key' } },
      hooks: { BeforeTool: hook(o.hookTimeoutS), AfterTool: hook() },
    }),
  );
  return {
    args: ['-p', prompt, '--skip-trust', '--approval-mode', 'yolo', '-m', 'gemini-2.5-pro'],
    env: { GEMINI_API_KEY: 'fake', GOOGLE_GEMINI_BASE_URL: o.model },
  };
}

/**
 * `opencode run` with a provider at the fake model (OpenAI chat completions) in the user's
 * opencode.json, and Sluice's plugin in the project, written by `sluice hook install opencode` as a
 * person runs it.
 */
async function opencode(prompt: string, o: RunOptions) {
  const dir = path.join(o.home, '.config', 'opencode');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(
    path.join(dir, 'opencode.json'),
    JSON.stringify({
      provider: {
        fake: {
          npm: '@ai-sdk/openai-compatible',
          name: 'fake',
          options: { baseURL: `${o.model}/v1`, apiKey: 'sk-fake' },
          models: { 'fake-model': { name: 'fake-model' } },
        },
      },
      model: 'fake/fake-model',
      autoupdate: false,
      share: 'disabled',
    }),
  );
  const s = o.sluice;
  const installed = await runProcess(
    process.execPath,
    [BIN, 'hook', 'install', 'opencode', '--project', o.cwd, '--timeout', String(o.hookTimeoutS)].concat([
      '--address',
      s.address,
      '--task-queue',
      s.taskQueue,
    ]),
    { cwd: o.cwd, env: process.env },
  );
  if (installed.code !== 0) throw new Error(`sluice hook install opencode failed: ${installed.stderr}`);
  return { args: ['run', prompt], env: {} };
}

const SETUP = { claude, codex, gemini, opencode };

/** Runs one headless prompt through the CLI; resolves when it exits. */
export async function runHarness(cli: HarnessCli, prompt: string, o: RunOptions): Promise<Ran> {
  fs.mkdirSync(o.home, { recursive: true });
  const { args, env } = await SETUP[cli](prompt, o);
  const bin = path.join(CACHE, 'node_modules', '.bin', HARNESS_CLIS[cli].bin);
  return runProcess(bin, args, { cwd: o.cwd, env: { ...baseEnv(o.home), ...env } });
}
