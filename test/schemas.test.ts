// Tool input schemas in their three forms (zod, any Standard Schema, plain JSON Schema as MCP
// servers publish it): refused at definition when unusable, validated alike through the real
// pipeline, and read back as model-facing schemas without the bodies (manifest, async config).
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { StandardSchemaV1 } from '@standard-schema/spec';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { z } from 'zod';
import { main } from '../cli';
import { ErrorCodes } from '../pipeline/errors';
import { defineConfig, defineTool, parseToolManifest, toolManifest, toolSchemas } from '../define/config';
import { loadConfig } from '../worker/load-config';
import { batch, startHarness, text, type Harness } from './harness';

/** Shaped like an MCP server's tools/list entry: draft 2020-12, `$defs`, `$ref`, enums, formats. */
const mcpEditSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: {
    path: { type: 'string', minLength: 1, description: 'File to edit' },
    mode: { type: 'string', enum: ['replace', 'append'], default: 'replace' },
    edits: { type: 'array', items: { $ref: '#/$defs/edit' }, minItems: 1 },
    notify: { type: 'string', format: 'email' },
  },
  required: ['path', 'edits'],
  additionalProperties: false,
  $defs: {
    edit: {
      type: 'object',
      properties: { oldText: { type: 'string' }, newText: { type: 'string' }, kind: { enum: ['exact', 'regex'] } },
      required: ['oldText', 'newText'],
      additionalProperties: false,
    },
  },
} as const;

/** zod-to-json-schema's draft-07 output, as older MCP servers send it. */
const draft07Schema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  type: 'object',
  properties: { level: { $ref: '#/definitions/level' } },
  required: ['level'],
  definitions: { level: { type: 'string', enum: ['low', 'high'] } },
};

/** A hand-made Standard Schema (not zod): what valibot, arktype and others implement. */
function positiveCount(): StandardSchemaV1<{ n: number }> & { '~standard': { jsonSchema: unknown } } {
  return {
    '~standard': {
      version: 1,
      vendor: 'handmade',
      validate: (v: unknown) =>
        typeof v === 'object' &&
        v !== null &&
        typeof (v as { n?: unknown }).n === 'number' &&
        (v as { n: number }).n > 0
          ? { value: v as { n: number } }
          : { issues: [{ message: 'n must be a positive number', path: ['n'] }] },
      jsonSchema: {
        input: () => ({ type: 'object', properties: { n: { type: 'number', exclusiveMinimum: 0 } }, required: ['n'] }),
        output: () => ({ type: 'object' }),
      },
    },
  };
}

const editTool = defineTool<{ path: string; edits: { oldText: string; newText: string }[] }>({
  name: 'mcp_edit',
  description: 'Edits a file (schema from an MCP server).',
  input: mcpEditSchema,
  execute: (args) => `edited ${args.path} with ${args.edits.length} edit(s)`,
});
const levelTool = defineTool<{ level: string }>({
  name: 'set_level',
  description: 'Sets a level (draft-07 schema).',
  input: draft07Schema,
  execute: ({ level }) => `level ${level}`,
});
const zodTool = defineTool({
  name: 'zod_edit',
  description: 'The same edit, in zod.',
  input: z.object({ path: z.string().min(1), edits: z.array(z.object({ oldText: z.string(), newText: z.string() })) }),
  execute: (args) => `edited ${args.path} with ${args.edits.length} edit(s)`,
});
const countTool = defineTool({
  name: 'count',
  description: 'Counts (a non-zod Standard Schema).',
  input: positiveCount(),
  execute: ({ n }) => `counted ${n}`,
});

// First: the harness installs Core's runtime before the CLI (below) would.
describe('JSON Schema tools validate arguments through the pipeline as zod tools do', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('schemas', defineConfig({ tools: [editTool, levelTool, zodTool, countTool] }));
  });
  afterAll(() => h?.close());

  it('valid arguments reach the body; invalid ones get INVALID_ARGS saying what is wrong', async () => {
    const edits = [{ oldText: 'a', newText: 'b' }];
    const out = await h.client.runBatch(
      batch([
        { name: 'mcp_edit', args: { path: 'f.txt', mode: 'append', edits } },
        { name: 'zod_edit', args: { path: 'f.txt', edits } },
        { name: 'mcp_edit', args: { path: 'f.txt', mode: 'prepend', edits: [{ oldText: 'a' }], extra: 1 } },
        { name: 'zod_edit', args: { path: 'f.txt', edits: [{ oldText: 'a' }] } },
        { name: 'mcp_edit', args: { path: 'f.txt', edits, notify: 'not-an-address' } },
        { name: 'set_level', args: { level: 'medium' } },
        { name: 'set_level', args: { level: 'high' } },
        { name: 'count', args: { n: -1 } },
        { name: 'count', args: { n: 3 } },
      ]),
    );
    const r = out.results.map((x) => x.result);
    expect(text(r[0])).toBe('edited f.txt with 1 edit(s)');
    expect(text(r[1])).toBe('edited f.txt with 1 edit(s)');
    for (const i of [2, 3, 4, 5, 7]) {
      expect(r[i].isError).toBe(true);
      expect(r[i].error?.code).toBe(ErrorCodes.INVALID_ARGS);
    }
    expect(text(r[2])).toContain('invalid arguments for mcp_edit');
    expect(text(r[2])).toContain('mode: must be equal to one of the allowed values ("replace", "append")');
    expect(text(r[2])).toContain("edits.0: must have required property 'newText'");
    expect(text(r[2])).toContain('must NOT have additional properties ("extra")');
    expect(text(r[3])).toMatch(/edits\.0\.newText: /);
    expect(text(r[4])).toContain('notify: must match format "email"');
    expect(text(r[5])).toContain('level: must be equal to one of the allowed values ("low", "high")');
    expect(text(r[6])).toBe('level high');
    expect(text(r[7])).toContain('n: n must be a positive number');
    expect(text(r[8])).toBe('counted 3');
  });
});

describe('defineTool refuses a schema it cannot use, naming the tool and the fix', () => {
  const tool =
    (input: unknown, extra: object = {}) =>
    () =>
      defineTool({ name: 'bad', description: 'x', input: input as { type: 'object' }, execute: () => 'x', ...extra });

  it.each([
    [
      'a string',
      'string',
      /input must be a zod schema, a Standard Schema .* or a plain JSON Schema object.*got string/,
    ],
    ['null', null, /got null/],
    ['a class instance', new Date(), /got an instance of Date/],
    ['an array', [{ type: 'object' }], /got an array/],
    ['a broken "~standard"', { '~standard': { version: 1 } }, /input must be a zod schema/],
    ['a non-object root', { type: 'string' }, /must describe an object \(type "object" at its root\)/],
    ['a misspelt type', { type: 'object', properties: { a: { type: 'strnig' } } }, /its JSON Schema is not valid/],
    [
      'a dangling $ref',
      { type: 'object', properties: { a: { $ref: '#/$defs/none' } } },
      /its JSON Schema is not valid/,
    ],
    [
      'draft-04',
      { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' },
      /unsupported \$schema.*draft-04/,
    ],
  ])('%s', (_what, input, message) => {
    expect(tool(input)).toThrow(message);
  });

  it('a Standard Schema that cannot produce JSON Schema, unless the model-facing one is given', () => {
    const bare: StandardSchemaV1 = { '~standard': { version: 1, vendor: 'bare', validate: (v) => ({ value: v }) } };
    expect(tool(bare)).toThrow(/bare schema cannot produce JSON Schema.*pass the model-facing schema as `inputSchema`/);
    const ok = tool(bare, { inputSchema: { type: 'object', properties: {} } })();
    expect(toolSchemas({ tools: [ok] })[0].inputSchema).toEqual({ type: 'object', properties: {} });
  });
});

describe('model-facing schemas, from every form and without the bodies', () => {
  it('toolSchemas gives JSON Schema for zod, a Standard Schema and JSON Schema alike', () => {
    const byName = Object.fromEntries(
      toolSchemas({ tools: [editTool, zodTool, countTool] }).map((s) => [s.name, s.inputSchema]),
    );
    expect(byName.mcp_edit).toEqual(mcpEditSchema);
    expect(byName.zod_edit).toMatchObject({ type: 'object', required: ['path', 'edits'] });
    expect(byName.count).toEqual({
      type: 'object',
      properties: { n: { type: 'number', exclusiveMinimum: 0 } },
      required: ['n'],
    });
  });

  it('a manifest is plain JSON that reads back, and anything else is refused', () => {
    const manifest = toolManifest({ tools: [editTool, countTool, { ...zodTool, aliases: ['Edit'] }] });
    const back = parseToolManifest(JSON.stringify(manifest));
    expect(back.tools.map((t) => [t.name, t.aliases ?? []])).toEqual([
      ['mcp_edit', []],
      ['count', []],
      ['zod_edit', ['Edit']],
    ]);
    expect(back.tools[0].inputSchema).toEqual(mcpEditSchema);
    expect(() => parseToolManifest('{"tools": []}')).toThrow(/not a Sluice tool manifest/);
  });

  it('a config module may discover its tools at start (an async function), and is checked like defineConfig', async () => {
    const dir = fs.mkdtempSync(path.join(inject('runDir'), 'async-config-'));
    const file = path.join(dir, 'discovered.config.js');
    fs.writeFileSync(
      file,
      `module.exports = async () => {
        await new Promise((r) => setTimeout(r, 10));
        const listed = [{ name: 'remote_echo', description: 'Echoes (listed at start).', inputSchema: { type: 'object', properties: { s: { type: 'string' } } } }];
        return { tools: listed.map((t) => ({ name: t.name, description: t.description, input: t.inputSchema, execute: (a) => a.s })) };
      };`,
    );
    const config = await loadConfig(file);
    expect(toolSchemas(config).map((t) => t.name)).toEqual(['remote_echo']);
    const dup = path.join(dir, 'dup.config.js');
    fs.writeFileSync(
      dup,
      `const t = { name: 'a', description: 'a', input: { type: 'object' }, execute: () => 1 };
       exports.default = Promise.resolve({ tools: [t, t] });`,
    );
    await expect(loadConfig(dup)).rejects.toThrow(/two tools answer to "a"/);

    const lines: string[] = [];
    expect(await main(['manifest', '--config', file], (l) => lines.push(l))).toBe(0);
    expect(parseToolManifest(lines.join('\n')).tools).toEqual([
      {
        name: 'remote_echo',
        description: 'Echoes (listed at start).',
        inputSchema: expect.objectContaining({ type: 'object' }),
      },
    ]);
  });
});
