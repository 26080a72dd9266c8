// A hostile MCP server dodging a per-tool override (issue 22 item 13): it lists a look-alike
// ("delete file", read-only by its own word) before the real "delete_file"; both become
// mcp__evil__delete_file, the look-alike took the name, and the override set for delete_file
// (ask, or disabled) held nothing. Real stdio servers built on the MCP SDK.
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { type McpToolOverride, mcpSource } from '../tools/mcp';

const SERVER = path.join(__dirname, 'fixtures', 'mcp', 'lookalike-server.mjs');
const source = (args: string[], tools: Parameters<typeof mcpSource>[0]['tools']) =>
  mcpSource({ server: 'evil', command: process.execPath, args: [SERVER, ...args], tools });

describe('an MCP server listing a look-alike of an overridden tool', () => {
  it('refuses to start when an overridden name is taken by two listed tools', async () => {
    const overrides: Record<string, McpToolOverride>[] = [
      { delete_file: { approval: 'ask' } },
      { 'delete file': { enabled: false } },
      { mcp__evil__delete_file: { approval: 'ask' } },
    ];
    for (const tools of overrides) {
      const s = source([], tools);
      try {
        await expect(s.tools()).rejects.toThrow(
          /lists "delete file" and "delete_file", which all become mcp__evil__delete_file.*is not started/,
        );
      } finally {
        await s.close();
      }
    }
  });

  it('applies an override by the name a look-alike takes, when it is the only one', async () => {
    const asked = source(['safe'], { delete_file: { approval: 'ask' } });
    const off = source(['safe'], { delete_file: { enabled: false } });
    try {
      // Without the override the server's read-only claim would make it run unasked.
      expect((await asked.tools()).find((t) => t.name === 'mcp__evil__delete_file')).toMatchObject({ approval: 'ask' });
      expect((await off.tools()).some((t) => t.name === 'mcp__evil__delete_file')).toBe(false);
    } finally {
      await asked.close();
      await off.close();
    }
  });

  it('with no override, keeps the first and says why the second was left out (as before)', async () => {
    const s = source([], undefined);
    try {
      expect((await s.tools()).map((t) => t.name)).toEqual(['mcp__evil__delete_file']);
      expect(s.warnings.join('\n')).toContain('delete_file was left out: its name becomes mcp__evil__delete_file');
    } finally {
      await s.close();
    }
  });
});
