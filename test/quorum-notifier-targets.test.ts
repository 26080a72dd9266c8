// Notifiers per batch (issue 27 item 4): a batch names which of the worker's notifiers get its
// approval notices (options.notifiers); a batch that names none notifies them all.
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineConfig } from '../define/config';
import { eventually } from './eventually';
import { batch, type Harness, startHarness } from './harness';
import { deployTool } from './fixtures/deploy-tool';

let h: Harness;
let server: http.Server;
const got: { path: string; text: string }[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      got.push({ path: req.url ?? '', text: JSON.parse(body).text });
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  h = await startHarness(
    'notifier-targets',
    defineConfig({
      tools: [deployTool()],
      notifiers: [
        { kind: 'chat', name: 'sre', url: `${base}/sre` },
        { kind: 'chat', name: 'dba', url: `${base}/dba` },
      ],
    }),
  );
});
afterAll(async () => {
  await h?.close();
  server?.close();
});

describe('notifiers per batch', () => {
  it("a batch's notices go only to the notifiers it names; a batch naming none reaches all", async () => {
    const named = await h.client.startBatch(
      batch([{ id: 'd', name: 'deploy', args: { env: 'db' } }], { options: { notifiers: ['dba'] } }),
    );
    const all = await h.client.startBatch(batch([{ id: 'd', name: 'deploy', args: { env: 'web' } }]));
    const p1 = await eventually('first ask', async () => (await h.client.readApprovals(named.workflowId)).pending[0]);
    const p2 = await eventually('second ask', async () => (await h.client.readApprovals(all.workflowId)).pending[0]);
    await eventually(
      'both notices of the second batch',
      () =>
        got.filter((g) => g.text.includes(p2.approvalId)).length === 2 &&
        got.some((g) => g.text.includes(p1.approvalId)),
    );
    expect(got.filter((g) => g.text.includes(p1.approvalId)).map((g) => g.path)).toEqual(['/dba']);
    expect(
      got
        .filter((g) => g.text.includes(p2.approvalId))
        .map((g) => g.path)
        .sort(),
    ).toEqual(['/dba', '/sre']);
    for (const hd of [named, all])
      await h.client.decide({
        workflowId: hd.workflowId,
        approvalId: (await h.client.readApprovals(hd.workflowId)).pending[0].approvalId,
        decision: 'deny',
        by: 'ops',
      });
  });
});
