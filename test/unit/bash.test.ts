// bash called directly: output and exit code, the output cap, the workspace as cwd, and that a
// timeout, a cancel or the end of the command leaves no process of its group running.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { bashTool } from '../../tools';
import { alive, pidsIn, treeCommand } from '../processes';
import { call, session } from '../tool-context';

const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bash-')));
const tools = [bashTool({ root, maxOutputChars: 200 })];

describe('bash', () => {
  it('runs in the workspace root and returns output and exit code', async () => {
    const r = await call(tools, 'bash', { command: 'pwd; echo err >&2; exit 3' }, session());
    expect(r.isError).toBe(false);
    expect(r.text).toBe(`${root}\nerr\n[exit code: 3]`);
    expect(r.meta).toMatchObject({ exitCode: 3, timedOut: false });
  });

  it('cuts long output from the middle with a note', async () => {
    const r = await call(tools, 'bash', { command: 'seq 1 5000' }, session());
    expect(r.text.startsWith('1\n2\n3\n')).toBe(true);
    expect(r.text).toContain('\n5000\n');
    expect(r.text).toMatch(/\[\d+ characters of output were cut from the middle\]\n\[exit code: 0\]$/);
    expect(r.text.length).toBeLessThan(400);
  });

  it('kills the whole process tree on timeout', async () => {
    const pidFile = path.join(root, 'timeout.pids');
    const r = await call(tools, 'bash', { command: treeCommand(pidFile), timeout: 1000 }, session());
    expect(r).toMatchObject({ isError: true, code: 'COMMAND_TIMEOUT' });
    expect(r.text).toContain('timed out after 1000 ms');
    const pids = pidsIn(pidFile);
    expect(pids).toHaveLength(3);
    await vi.waitFor(() => expect(pids.filter(alive)).toEqual([]), { timeout: 5000 });
  });

  it('kills the whole process tree when the batch is cancelled, and fails the body', async () => {
    const pidFile = path.join(root, 'abort.pids');
    const abort = new AbortController();
    const running = call(tools, 'bash', { command: treeCommand(pidFile) }, session(), abort.signal);
    await vi.waitFor(() => expect(pidsIn(pidFile)).toHaveLength(3), { timeout: 5000 });
    abort.abort();
    await expect(running).rejects.toThrow(/batch was cancelled/);
    const pids = pidsIn(pidFile);
    await vi.waitFor(() => expect(pids.filter(alive)).toEqual([]), { timeout: 5000 });
  });

  it('ends background processes the command leaves behind', async () => {
    const r = await call(tools, 'bash', { command: 'sleep 300 & echo $!' }, session());
    const pid = Number(r.text.split('\n')[0]);
    await vi.waitFor(() => expect(alive(pid)).toBe(false), { timeout: 5000 });
  });

  it('ships asking for approval, is never retried and never concurrency-safe', () => {
    const t = bashTool({ root });
    expect(t.approval).toBe('ask');
    expect(t.retry).toEqual({ maximumAttempts: 1 });
    expect(t.isConcurrencySafe).toBeUndefined();
    expect(t.aliases).toEqual(['Bash']);
  });
});
