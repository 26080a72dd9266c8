// The claim check's store and its bounds, without a server.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resultBytes } from '../../pipeline/budget';
import {
  claimCheck,
  FileResultStore,
  fileNameFor,
  stashCandidate,
  unstashCandidate,
  type ResultStore,
} from '../../stores/claim-check';

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-claim-'));
const big = (n: number) => ({ content: [{ type: 'text' as const, text: 'z'.repeat(n) }], isError: false });

describe('FileResultStore', () => {
  it('stores under a name derived from the key; a retry writes the same file again', async () => {
    const store = new FileResultStore(tmp());
    const key = 'sluice-batch:s/1:1/call-1';
    const a = await store.put(key, { v: 1 });
    const b = await store.put(key, { v: 1 });
    expect(a).toBe(b);
    expect(await store.get(a)).toEqual({ v: 1 });
    expect(fs.readdirSync(store.dir)).toEqual([fileNameFor(key)]);
  });

  it('small and large values alike: written whole under their name, no temporary file left, the folder made when missing', async () => {
    const parent = tmp();
    const store = new FileResultStore(path.join(parent, 'not', 'yet'));
    const small = { text: 'a'.repeat(100) };
    const large = { text: 'b'.repeat(200_000) }; // past the synchronous write's bound
    const refs = [await store.put('small', small), await store.put('large', large)];
    expect(await store.get(refs[0])).toEqual(small);
    expect(await store.get(refs[1])).toEqual(large);
    fs.rmSync(path.join(parent, 'not'), { recursive: true });
    const again = await store.put('small', small);
    expect(await store.get(again)).toEqual(small);
    expect(fs.readdirSync(store.dir)).toEqual([fileNameFor('small')]);
  });

  it('keeps names short and distinct for long or look-alike keys', () => {
    const long = fileNameFor('k'.repeat(5000));
    expect(long.length).toBeLessThan(160);
    expect(fileNameFor('a/b')).not.toBe(fileNameFor('a_b'));
  });

  it('reads nothing outside its folder, whatever the reference says', async () => {
    const dir = tmp();
    fs.writeFileSync(path.join(dir, '..', 'outside.json'), JSON.stringify({ value: 'secret' }));
    const store = new FileResultStore(dir);
    for (const ref of [
      'sluice-result:../outside.json',
      'sluice-result:/etc/passwd',
      'sluice-result:.hidden',
      'elsewhere:x',
    ])
      expect(await store.get(ref)).toBeUndefined();
  });
});

describe('claimCheck', () => {
  it('leaves a result within its bounds alone', async () => {
    const r = big(10);
    expect(await claimCheck(new FileResultStore(tmp()), 'k', r, { maxChars: 100, maxBytes: 1000 })).toBe(r);
  });

  it('stores the whole result and fits the preview, note and reference in the byte share', async () => {
    const store = new FileResultStore(tmp());
    const r = await claimCheck(store, 'wf/call-9', big(50_000), { maxChars: 64_000, maxBytes: 2_000 });
    expect(resultBytes(r)).toBeLessThanOrEqual(2_000);
    const ref = (r.meta!.storedResult as { ref: string }).ref;
    expect((await store.get(ref)) as unknown).toEqual(big(50_000));
  });

  it('says the rest was dropped when the store fails', async () => {
    const broken: ResultStore = { put: async () => Promise.reject(new Error('disk full')), get: async () => undefined };
    const r = await claimCheck(broken, 'k', big(5_000), { maxChars: 100, maxBytes: 10_000 });
    expect(r.content.map((b) => (b.type === 'text' ? b.text : '')).join('')).toMatch(
      /could not be stored aside \(disk full\) and was dropped/,
    );
  });
});

describe('stash and unstash', () => {
  it('a body result over the share crosses as a preview and comes back whole', async () => {
    const store = new FileResultStore(tmp());
    const candidate = { ...big(100_000), value: 'z'.repeat(100_000) };
    const stashed = await stashCandidate(store, 'wf/c1', candidate, 4_000);
    expect(stashed.stashed).toMatch(/^sluice-result:/);
    expect(stashed.value).toBeUndefined();
    expect(JSON.stringify(stashed).length).toBeLessThan(4_000);
    expect(await unstashCandidate(store, stashed)).toEqual(candidate);
  });

  it('a store that lost the result leaves the preview with a note', async () => {
    const stashed = await stashCandidate(new FileResultStore(tmp()), 'wf/c2', big(100_000), 4_000);
    const back = await unstashCandidate(new FileResultStore(tmp()), stashed);
    expect(back.stashed).toBeUndefined();
    expect(back.content[back.content.length - 1]).toMatchObject({
      text: expect.stringMatching(/not readable from this worker's result store/),
    });
  });
});
