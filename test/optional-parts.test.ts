// Optional parts are optional: with every optional peer dependency missing (as in an app that
// installed Sluice for its client side), each entry point and the CLI still load, client commands
// run against the test server, and a feature used without its package fails at once with one line
// naming what to install. "Missing" is Node's own MODULE_NOT_FOUND, raised by a preloaded resolver
// hook (test/fixtures/optional/absent.js) for the packages listed; the fresh-app install matrix
// checks the same with the packages really absent.
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';

const run = promisify(execFile);
const repo = path.resolve(__dirname, '..');

const WORKER = '@temporalio/worker';
const OPTIONAL = [
  'pg',
  '@opentelemetry/api',
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/resources',
  '@opentelemetry/sdk-trace-base',
  'prom-client',
  '@modelcontextprotocol/sdk',
  'quickjs-emscripten-core',
  '@jitl/quickjs-wasmfile-release-sync',
  '@temporalio/testing',
  '@temporalio/interceptors-opentelemetry',
  'ai',
  'openai',
  '@anthropic-ai/sdk',
  '@temporalio/envconfig',
];

/** Runs `code` (CommonJS, from the checkout's root, TypeScript through tsx) with `absent` missing. */
async function without(absent: string[], code: string, args: string[] = []) {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      [
        '--require',
        'tsx/cjs',
        '--require',
        './test/fixtures/optional/absent.js',
        ...(code ? ['-e', code] : []),
        ...args,
      ],
      {
        cwd: repo,
        env: { ...process.env, SLUICE_TEST_ABSENT: absent.join(','), TEMPORAL_ADDRESS: inject('temporalAddress') },
        timeout: 120_000,
      },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** The message a feature's MissingPackageError prints, from a script that catches it. */
const messageOf = (body: string) => `
  (async () => { ${body} })().then(
    () => console.log('NO ERROR'),
    (err) => console.log(JSON.stringify({ name: err.name, message: err.message })),
  );`;

describe('with every optional package missing', () => {
  it('sluice, sluice/client, sluice/tools, sluice/hooks, sluice/code-mode, sluice/workflow and sluice/agent load', async () => {
    const entries = [
      'index.ts',
      'client/index.ts',
      'tools/index.ts',
      'hooks/index.ts',
      'tools/code-mode/index.ts',
      'workflows/public.ts',
      'agent/index.ts',
    ];
    const r = await without(
      [...OPTIONAL, WORKER],
      `for (const e of ${JSON.stringify(entries)}) require('./' + e); console.log('loaded');`,
    );
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('loaded');
  });

  it('sluice/worker loads with @temporalio/worker and nothing else optional', async () => {
    const r = await without(OPTIONAL, `require('./worker/index.ts'); console.log('loaded');`);
    expect(r.stdout.trim()).toBe('loaded');
  });

  it('sluice/worker without @temporalio/worker names what to install, in one line', async () => {
    const r = await without([...OPTIONAL, WORKER], messageOf(`require('./worker/index.ts');`));
    const out = JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '{}') as { name?: string; message?: string };
    expect(out).toEqual({
      name: 'MissingPackageError',
      message:
        'sluice/worker (hosting Sluice) needs @temporalio/worker, which is not installed: npm install @temporalio/worker',
    });
  });

  it('sluice/workflow and sluice/code-mode without their Temporal package name what to install, in one line', async () => {
    // A client-only app has @temporalio/client (and common, proto) and nothing else of Temporal's.
    const clientOnly = [...OPTIONAL, WORKER, '@temporalio/workflow', '@temporalio/activity'];
    const [workflow, codeMode] = await Promise.all(
      ['workflows/public.ts', 'tools/code-mode/index.ts'].map((entry) =>
        without(clientOnly, messageOf(`require('./${entry}');`)),
      ),
    );
    const last = (r: { stdout: string }) => JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '{}');
    expect(last(workflow)).toEqual({
      name: 'MissingPackageError',
      message:
        'sluice/workflow (for your own workflows) needs @temporalio/workflow, which is not installed: npm install @temporalio/workflow',
    });
    expect(last(codeMode)).toEqual({
      name: 'MissingPackageError',
      message:
        'sluice/code-mode (Code Mode runs in a worker) needs @temporalio/worker, which is not installed: npm install @temporalio/worker',
    });
  });

  it('the CLI runs client commands on a plain client connection, and `sluice worker` names what to install', async () => {
    const help = await without([...OPTIONAL, WORKER], '', ['bin/sluice.js', '--help']);
    expect(help.stdout).toContain('sluice — durable tool batches for AI agents');
    // A client command against the test server: setup registers (here: finds) the search attributes.
    const setup = await without([...OPTIONAL, WORKER], '', ['bin/sluice.js', 'setup']);
    expect(setup.stdout).toContain('search attributes already registered');
    expect(setup.code).toBe(0);
    const worker = await without([...OPTIONAL, WORKER], '', ['bin/sluice.js', 'worker']);
    expect(worker.code).not.toBe(0);
    expect(`${worker.stdout}${worker.stderr}`).toContain(
      '`sluice worker` needs @temporalio/worker, which is not installed: npm install @temporalio/worker',
    );
  });

  it('each feature used without its package fails at once with one line naming what to install', async () => {
    const cases: [string, string, string][] = [
      [
        'PostgreSQL stores',
        `const { PostgresStores } = require('./stores/postgres.ts'); new PostgresStores('postgres://localhost/x');`,
        'PostgreSQL stores (SLUICE_DATABASE_URL) needs pg, which is not installed: npm install pg',
      ],
      [
        'telemetry',
        `const { SluiceTelemetry } = require('./worker/telemetry.ts'); new SluiceTelemetry();`,
        'npm install prom-client @opentelemetry/api @opentelemetry/resources @opentelemetry/sdk-trace-base',
      ],
      [
        'MCP tools',
        `const { mcpTools } = require('./tools/index.ts'); await mcpTools({ server: 'x', command: 'true' });`,
        'MCP tools (mcpTools) needs @modelcontextprotocol/sdk, which is not installed: npm install @modelcontextprotocol/sdk',
      ],
      [
        'code mode',
        `const { runProgram } = require('./tools/code-mode/sandbox.ts');
         await runProgram({ code: '1', toolNames: [], seed: 's', now: 0, callTool: async () => ({}) });`,
        'npm install quickjs-emscripten-core @jitl/quickjs-wasmfile-release-sync',
      ],
      [
        'an OpenAI model',
        `const { openAIChatModel } = require('./agent/index.ts');
         await openAIChatModel('m').step({ messages: [], tools: [] });`,
        'npm install openai',
      ],
      [
        'connection settings only @temporalio/envconfig reads',
        `process.env.TEMPORAL_API_KEY = 'k';
         const { connect } = require('./client/index.ts'); await connect();`,
        'needs @temporalio/envconfig, which is not installed: npm install @temporalio/envconfig',
      ],
      [
        'an Anthropic model',
        `const { anthropicModel } = require('./agent/index.ts');
         await anthropicModel('m').step({ messages: [], tools: [] });`,
        'npm install @anthropic-ai/sdk',
      ],
    ];
    const results = await Promise.all(cases.map(([, body]) => without(OPTIONAL, messageOf(body))));
    results.forEach((r, i) => {
      const [feature, , expected] = cases[i];
      const lines = r.stdout.trim().split('\n');
      const out = JSON.parse(lines.at(-1) ?? '{}') as { name?: string; message?: string };
      expect(out.message, `${feature}: ${r.stdout}${r.stderr}`).toContain(expected);
      expect(out.message?.split('\n')).toHaveLength(1);
    });
  });
});
