// A stdio gateway for bench/gateway.ts that says where each call's time goes: the gateway's own MCP
// server (gatewayServer, what `sluice gateway` serves) on a Sluice client whose startBatch is
// timed. For every call it writes one line to stderr, `timing {"called","started","result"}`:
// when the handler called startBatch, when Temporal had started the batch, when the result was
// back, as epoch milliseconds (performance.timeOrigin + now), comparable with the bench's.
// Usage (by the bench): tsx bench/gateway-child.ts <address> <task queue> <tools.json> <session>
import * as fs from 'node:fs';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { SluiceClient } from '../client/client';
import { gatewayServer } from '../servers/gateway';
import type { ToolSchema } from '../define/config';
import { connectClient } from '../temporal/connection';

const now = () => performance.timeOrigin + performance.now();

async function main() {
  const [address, taskQueue, toolsFile, session] = process.argv.slice(2);
  const tools = JSON.parse(fs.readFileSync(toolsFile, 'utf8')) as ToolSchema[];
  const { connection } = await connectClient({ address });
  const sluice = new SluiceClient({ connection, taskQueue });
  const startBatch = sluice.startBatch.bind(sluice);
  sluice.startBatch = async (request) => {
    const called = now();
    const handle = await startBatch(request);
    const started = now();
    const result = handle.result;
    handle.result = async () => {
      const out = await result();
      process.stderr.write(`timing ${JSON.stringify({ called, started, result: now() })}\n`);
      return out;
    };
    return handle;
  };
  await gatewayServer({ tools, sluice }, () => session).connect(new StdioServerTransport());
  process.stderr.write('gateway-child: ready\n');
}

main().catch((err) => {
  process.stderr.write(`gateway-child: ${(err as Error).stack}\n`);
  process.exit(1);
});
