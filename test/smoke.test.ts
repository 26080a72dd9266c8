import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineConfig, defineTool } from '../worker/config';
import { batch, startHarness, text, type Harness } from './harness';

const echo = defineTool({ name: 'echo', description: 'echo', input: z.object({ text: z.string() }), execute: ({ text }) => text });
let h: Harness;
beforeAll(async () => {
  h = await startHarness('smoke', defineConfig({ tools: [echo] }));
});
afterAll(() => h?.close());

describe('smoke', () => {
  it('runs a call', async () => {
    const out = await h.client.runBatch(batch([{ name: 'echo', args: { text: 'hi' } }]));
    expect(text(out.results[0].result)).toBe('hi');
    console.log(JSON.stringify(out.events.map((e) => e.type)));
  });
});
