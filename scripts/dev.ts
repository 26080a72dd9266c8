// `npx sluice dev`: the embedded Temporal dev server and a worker, in the foreground.
import * as path from 'node:path';
import { runWorker } from '../worker/main';
import { startDevServer, portOpen } from '../worker/dev-server';

export interface DevOptions {
  stateDir: string;
  config?: string;
  port?: number;
  uiPort?: number;
  headless?: boolean;
  taskQueue?: string;
}

export async function runDev(opts: DevOptions): Promise<void> {
  const port = opts.port ?? 7233;
  if (await portOpen('127.0.0.1', port)) {
    throw new Error(`something already listens on 127.0.0.1:${port}. If it is a Sluice dev server, run just a worker (\`npx sluice worker\`); otherwise choose another port with --port.`);
  }
  const server = await startDevServer({ stateDir: opts.stateDir, port, uiPort: opts.uiPort, headless: opts.headless, log: (l) => console.log(l) });
  console.log(`Temporal dev server: ${server.address} (database ${path.join(opts.stateDir, 'temporal.db')}, CLI ${server.cli})`);
  if (server.uiUrl) console.log(`Temporal Web UI:     ${server.uiUrl}`);
  console.log(`Session logs:        ${path.join(opts.stateDir, 'sessions')}/<session>.jsonl   (Ctrl-C stops both)`);
  try {
    await runWorker({ config: opts.config, address: server.address, taskQueue: opts.taskQueue, stateDir: opts.stateDir });
  } finally {
    await server.stop();
  }
}
