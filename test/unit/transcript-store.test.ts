import { describe, expect, it } from 'vitest';
import { TranscriptStore } from '../../agent/transcript-store';
import type { AgentMessage } from '../../pipeline/session';
import type { ResultStore } from '../../stores/claim-check';
import type { Json } from '../../pipeline/types';

/** A result store in memory that counts its reads. */
function countingStore() {
  const values = new Map<string, Json>();
  const store: ResultStore & { gets: number } = {
    gets: 0,
    async put(key, value) {
      values.set(key, structuredClone(value));
      return `mem:${key}`;
    },
    async get(ref) {
      store.gets++;
      return structuredClone(values.get(ref.slice(4)));
    },
  };
  return store;
}

const text = (m: AgentMessage) => ('content' in m ? String(m.content) : '');

const step = (i: number, size: number): AgentMessage[] => [
  { role: 'user', content: `step ${i} ${'x'.repeat(size)}` } as AgentMessage,
];

describe('TranscriptStore cache', () => {
  it('keeps no more than its byte bound, dropping the least recently used node first', async () => {
    const store = countingStore();
    // Each node is about 2 * 1,100 bytes by the estimate: four fit in 10,000, five do not.
    const transcripts = new TranscriptStore(store, { nodes: 1000, bytes: 10_000 });
    let head: string | null = null;
    const heads: string[] = [];
    for (let i = 0; i < 6; i++) {
      head = await transcripts.append(head, step(i, 1000));
      heads.push(head!);
    }
    expect(transcripts.cached.nodes).toBe(4);
    expect(transcripts.cached.bytes).toBeLessThanOrEqual(10_000);

    // The whole chain loads, oldest first; the two evicted nodes come from the store.
    const all = await transcripts.load(head);
    expect(all.map((m) => text(m).slice(0, 6))).toEqual(['step 0', 'step 1', 'step 2', 'step 3', 'step 4', 'step 5']);
    expect(store.gets).toBe(2);
    expect(transcripts.cached.bytes).toBeLessThanOrEqual(10_000);

    // A node just read is recent: reading it again costs no store read.
    const before = store.gets;
    await transcripts.load(heads[0]);
    expect(store.gets).toBe(before);
  });

  it('a node read is kept over one not read since (least recently used, not first in)', async () => {
    const store = countingStore();
    const transcripts = new TranscriptStore(store, { nodes: 3, bytes: 1 << 30 });
    const heads: string[] = [];
    let head: string | null = null;
    for (let i = 0; i < 3; i++) heads.push((head = await transcripts.append(head, step(i, 10)))!);
    await transcripts.load(heads[0]); // node 0 is now the most recent
    await transcripts.append(head, step(3, 10)); // one must go: node 1, read least recently
    await transcripts.load(heads[0]);
    expect(store.gets).toBe(0);
    await transcripts.load(heads[1]);
    expect(store.gets).toBe(1);
  });

  it('keeps no more than its node bound', async () => {
    const transcripts = new TranscriptStore(countingStore(), { nodes: 3, bytes: 1 << 30 });
    let head: string | null = null;
    for (let i = 0; i < 10; i++) head = await transcripts.append(head, step(i, 10));
    expect(transcripts.cached.nodes).toBe(3);
    expect((await transcripts.load(head)).length).toBe(10);
    expect(transcripts.cached.nodes).toBe(3);
  });

  it('does not cache a node larger than the whole bound, and still loads it', async () => {
    const store = countingStore();
    const transcripts = new TranscriptStore(store, { nodes: 10, bytes: 1000 });
    const head = await transcripts.append(null, step(0, 5000));
    expect(transcripts.cached).toEqual({ nodes: 0, bytes: 0 });
    expect(text((await transcripts.load(head))[0])).toContain('step 0');
    expect(text((await transcripts.load(head))[0])).toContain('step 0');
    expect(store.gets).toBe(2);
  });
});
