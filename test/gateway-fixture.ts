// What the checkout's gateway tests share (test/gateway.test.ts, gateway-resume, gateway-inbox):
// the folder the upstream server logs its calls to, that log, one JSON-RPC message posted to an
// HTTP gateway, and `bin/sluice.js gateway` processes, started until they listen and stopped at
// the end of the file. test/gateway-package.test.ts runs the installed package instead.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { inject } from 'vitest';

export const BIN = path.join(__dirname, '..', 'bin', 'sluice.js');
/** The gateway tests' config: the upstream server, the stock filesystem server, a guard and a redaction. */
export const GATEWAY_CONFIG = path.join(__dirname, 'fixtures', 'gateway.config.ts');

/**
 * A new folder under the run's folder for the upstream server's call log (and the filesystem
 * server's workspace, `ws/`), set as GATEWAY_MARKS: the fixture config reads it when it loads.
 */
export function gatewayMarks(prefix: string): string {
  const marks = fs.mkdtempSync(path.join(inject('runDir'), `${prefix}-`));
  process.env.GATEWAY_MARKS = marks;
  fs.mkdirSync(path.join(marks, 'ws'));
  return marks;
}

/** The calls the upstream server received, in order. */
export function upstreamCalls(marks: string): { tool: string; args: Record<string, unknown> }[] {
  const file = path.join(marks, 'calls.log');
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

export const textOf = (r: CallToolResult) =>
  r.content.map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join('\n');

/**
 * The bearer token of the gateways `gatewayProcesses` starts (an HTTP gateway needs one), sent by
 * `post` unless its headers name an authorization of their own.
 */
export const GATEWAY_TOKEN = randomBytes(24).toString('base64url');
/** Headers that carry GATEWAY_TOKEN, for the SDK's client (`requestInit: { headers: authorized }`). */
export const authorized = { authorization: `Bearer ${GATEWAY_TOKEN}` };

/** One JSON-RPC message (or a raw body) posted to the gateway; the answer read from JSON or from its event stream. */
export async function post(url: string, message: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...authorized,
      ...headers,
    },
    body: typeof message === 'string' ? message : JSON.stringify(message),
  });
  const text = await res.text();
  const data = /^data: (.*)$/m.exec(text)?.[1] ?? text;
  let json: any;
  try {
    json = JSON.parse(data);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, session: res.headers.get('mcp-session-id') ?? undefined };
}

/** The arguments of `bin/sluice.js gateway` on the fixture config, this task queue and the run's server. */
export function gatewayArgs(taskQueue: string, extra: string[] = []): string[] {
  return [
    BIN,
    'gateway',
    '--config',
    GATEWAY_CONFIG,
    '--task-queue',
    taskQueue,
    '--address',
    inject('temporalAddress'),
    ...extra,
  ];
}

/** A test file's `sluice gateway --http` processes: `start` resolves once one listens; `stopAll` for afterAll. */
export function gatewayProcesses(taskQueue: () => string) {
  const children: ChildProcess[] = [];
  return {
    /**
     * `--http --port 0` (a free port) unless `extra` gives a port, with GATEWAY_TOKEN (through
     * --token-env) unless `extra` says how to serve without it; GATEWAY_MARKS as set now.
     */
    start(extra: string[] = [], env: Record<string, string> = {}): Promise<{ child: ChildProcess; url: string }> {
      const ownToken = extra.some((a) => a === '--token-env' || a === '--token-file' || a === '--no-token');
      const token = ownToken ? [] : ['--token-env', 'SLUICE_TEST_GATEWAY_TOKEN'];
      const child = spawn(process.execPath, gatewayArgs(taskQueue(), ['--http', '--port', '0', ...token, ...extra]), {
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env, SLUICE_TEST_GATEWAY_TOKEN: GATEWAY_TOKEN, ...env },
      });
      children.push(child);
      let err = '';
      return new Promise((resolve, reject) => {
        child.stderr!.on('data', (d: Buffer) => {
          err += d.toString();
          const m = /on (http:\/\/\S+\/mcp)/.exec(err);
          if (m) resolve({ child, url: m[1] });
        });
        child.once('exit', (code) => reject(new Error(`the gateway exited (${code}) before it listened:\n${err}`)));
      });
    },
    /** SIGTERM to those still running, SIGKILL after 15 s; resolves when all have exited. */
    async stopAll() {
      await Promise.all(children.map((c) => stopped(c)));
    },
  };
}

/** Stops a child process (SIGTERM, then SIGKILL after 15 s); resolves when it has exited. */
export function stopped(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
