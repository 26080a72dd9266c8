// What an app of the install matrix compiles with every check on (skipLibCheck false, CommonJS,
// node16 resolution): a consumer of the entries a config and a client use, and one of every entry
// a worker app uses. Shared by the client-only app (install-matrix.test.ts) and the worker apps,
// which are the README cells' apps (readme-blocks.ts).
import * as fs from 'node:fs';
import * as path from 'node:path';

/** A consumer of the entries a config and a client use. */
export const CONSUMER = `
import { defineConfig, defineTool, MissingPackageError, type SluiceConfig, type BatchOutput } from 'sluice';
import { connect, SluiceClient, sealIdentity, type SealKey } from 'sluice/client';
import { scriptedModel, toOpenAIChatMessages } from 'sluice/agent';

export const config: SluiceConfig = defineConfig({
  tools: [defineTool({ name: 't', description: 'd', input: { type: 'object', properties: {} }, execute: () => 'ok' })],
});
export type Out = BatchOutput;
export const uses = [connect, SluiceClient, sealIdentity, scriptedModel, toOpenAIChatMessages, MissingPackageError];
export type Key = SealKey;
`;

/**
 * A worker app's consumer: every entry, sluice/workflow among them (it needs @temporalio/workflow,
 * which the worker brings), with none of the optional packages (pg, OpenTelemetry, prom-client, the
 * MCP SDK) installed: no declaration may name one.
 */
export const WORKER_CONSUMER = `
import { type ToolBatchWorkflow, BATCH_WORKFLOW } from 'sluice/workflow';
import { SluicePlugin, SluiceTelemetry, PostgresStores, createSluiceWorker } from 'sluice/worker';
import * as tools from 'sluice/tools';
import * as hooks from 'sluice/hooks';
import * as codeMode from 'sluice/code-mode';
export const name = BATCH_WORKFLOW;
export type W = ToolBatchWorkflow;
export const uses = [SluicePlugin, SluiceTelemetry, PostgresStores, createSluiceWorker, tools.mcpTools, hooks, codeMode];
`;

/**
 * The compiler options the consumers are checked with. @types/ms: @temporalio/common's
 * declarations name `ms`, whose CommonJS entry has none; any app with skipLibCheck false needs it,
 * Sluice or not (docs/installing.md).
 */
export const STRICT_COMMONJS = {
  target: 'ES2022',
  module: 'node16',
  moduleResolution: 'node16',
  strict: true,
  skipLibCheck: false,
  types: ['node'],
};

/** The @temporalio packages an app's install placed anywhere, by name, from npm's lock. */
export function temporalPackages(appDir: string): Set<string> {
  const lock = JSON.parse(fs.readFileSync(path.join(appDir, 'node_modules', '.package-lock.json'), 'utf8'));
  return new Set(
    Object.keys(lock.packages)
      .map((p) => p.match(/node_modules\/(@temporalio\/[^/]+)$/)?.[1])
      .filter((n): n is string => !!n),
  );
}
