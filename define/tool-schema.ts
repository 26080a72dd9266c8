// A tool's input schema in any of the three forms a user may hold: zod, any Standard Schema, or a
// plain JSON Schema object (what MCP servers and many libraries publish). Each is checked once,
// when the tool is defined, so a bad schema fails at start instead of on every call.
import type { StandardJSONSchemaV1, StandardSchemaV1 } from '@standard-schema/spec';
import Ajv, { type ValidateFunction } from 'ajv';
import Ajv2019 from 'ajv/dist/2019';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { RE2JS } from 're2js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../pipeline/json';
import type { JsonObject } from '../pipeline/types';

/** A JSON Schema object; its root must describe an object (`type: "object"`), as models require. */
export interface JsonSchema {
  type?: unknown;
  properties?: Record<string, unknown>;
  required?: readonly string[];
  $schema?: string;
  $defs?: Record<string, unknown>;
  [keyword: string]: unknown;
}

/** What `defineTool` accepts as `input`. */
export type ToolInputSchema = StandardSchemaV1 | JsonSchema;

type ArgsCheck = { ok: true; value: unknown } | { ok: false; issues: string };

interface CompiledSchema {
  check(value: unknown): ArgsCheck;
  /** The model-facing JSON Schema. */
  jsonSchema(): JsonObject;
}

const compiled = new WeakMap<object, CompiledSchema>();

/**
 * Compiles a tool's schema, or throws saying what is wrong with it. `modelSchema` is the tool's
 * explicit model-facing schema, needed for a Standard Schema that cannot produce JSON Schema.
 */
export function compileToolSchema(tool: string, schema: unknown, modelSchema?: JsonObject): CompiledSchema {
  if (schema !== null && typeof schema === 'object') {
    const hit = compiled.get(schema);
    if (hit) return hit;
  }
  const made = compile(tool, schema, modelSchema);
  compiled.set(schema as object, made);
  return made;
}

function compile(tool: string, schema: unknown, modelSchema?: JsonObject): CompiledSchema {
  if (isStandardSchema(schema)) return standardSchema(tool, schema, modelSchema);
  if (isPlainObject(schema) && !('~standard' in (schema as object))) return jsonSchema(tool, schema as JsonSchema);
  throw new Error(
    `tool ${tool}: input must be a zod schema, a Standard Schema (an object with a "~standard" property) or a plain JSON Schema object with type "object"; got ${describe(schema)}`,
  );
}

function standardSchema(tool: string, schema: StandardSchemaV1, modelSchema?: JsonObject): CompiledSchema {
  const converter = (schema['~standard'] as Partial<StandardJSONSchemaV1.Props>).jsonSchema;
  let model: JsonObject;
  if (modelSchema) {
    model = jsonSchema(tool, modelSchema as JsonSchema).jsonSchema();
  } else if (converter && typeof converter.input === 'function') {
    try {
      model = converter.input({ target: 'draft-2020-12' }) as JsonObject;
    } catch (err) {
      throw new Error(
        `tool ${tool}: its ${schema['~standard'].vendor} schema cannot be turned into JSON Schema for the model (${messageOf(err)}); pass the model-facing schema as \`inputSchema\``,
      );
    }
  } else {
    throw new Error(
      `tool ${tool}: its ${schema['~standard'].vendor} schema cannot produce JSON Schema (it has no "~standard.jsonSchema"); pass the model-facing schema as \`inputSchema\``,
    );
  }
  return {
    check(value) {
      let result: StandardSchemaV1.Result<unknown> | Promise<StandardSchemaV1.Result<unknown>>;
      try {
        result = schema['~standard'].validate(value);
      } catch (err) {
        return { ok: false, issues: `the schema threw: ${messageOf(err)}` };
      }
      if (result instanceof Promise) {
        void result.catch(() => undefined);
        return {
          ok: false,
          issues: `the tool's schema validates asynchronously, which Sluice does not support; give ${tool} a synchronous schema`,
        };
      }
      if (!result.issues) return { ok: true, value: result.value };
      return { ok: false, issues: result.issues.map(standardIssue).join('; ') };
    },
    jsonSchema: () => model,
  };
}

function standardIssue(issue: StandardSchemaV1.Issue): string {
  const path = (issue.path ?? []).map((p) => String(typeof p === 'object' ? p.key : p));
  return `${path.length ? path.join('.') : '(root)'}: ${issue.message}`;
}

function jsonSchema(tool: string, schema: JsonSchema): CompiledSchema {
  if (schema.type !== 'object')
    throw new Error(
      `tool ${tool}: a JSON Schema input must describe an object (type "object" at its root), as models and MCP require; got type ${JSON.stringify(schema.type)}`,
    );
  // Before any walk that recurses (the validator's compiler, the copy below): a schema nested
  // thousands of levels deep, as an MCP server may list, would overflow the stack.
  if (nestsDeeperThan(schema, MAX_JSON_DEPTH))
    throw new Error(
      `tool ${tool}: its JSON Schema nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep, the most Sluice accepts; flatten the schema`,
    );
  let validate: ValidateFunction;
  try {
    validate = validatorFor(schema.$schema).compile(schema);
  } catch (err) {
    throw new Error(`tool ${tool}: its JSON Schema is not valid: ${messageOf(err)}`);
  }
  const model = JSON.parse(JSON.stringify(schema)) as JsonObject;
  return {
    check(value) {
      if (validate(value)) return { ok: true, value };
      const issues = (validate.errors ?? []).map((e) => {
        const where = e.instancePath ? e.instancePath.slice(1).replace(/\//g, '.') : '(root)';
        const extra =
          e.keyword === 'enum' && Array.isArray((e.params as { allowedValues?: unknown[] }).allowedValues)
            ? ` (${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')})`
            : e.keyword === 'additionalProperties'
              ? ` (${JSON.stringify((e.params as { additionalProperty?: string }).additionalProperty)})`
              : '';
        return `${where}: ${e.message ?? e.keyword}${extra}`;
      });
      return { ok: false, issues: issues.join('; ') || 'does not match the schema' };
    },
    jsonSchema: () => model,
  };
}

type AnyAjv = Ajv | Ajv2019 | Ajv2020;
const validators = new Map<string, AnyAjv>();

/** One validator per dialect: draft-07 (and 06) schemas keep their meaning; 2019-09 and 2020-12 theirs. */
function validatorFor($schema: string | undefined): AnyAjv {
  const dialect = !$schema
    ? '2020'
    : /draft-0[67]/.test($schema)
      ? '07'
      : /2019-09/.test($schema)
        ? '2019'
        : /2020-12/.test($schema)
          ? '2020'
          : undefined;
  if (!dialect)
    throw new Error(
      `unsupported $schema ${JSON.stringify($schema)}: use draft 2020-12, 2019-09, 07 or 06 (draft-04 schemas need their "id" and exclusive bounds rewritten)`,
    );
  let ajv = validators.get(dialect);
  if (!ajv) {
    // strict: false accepts the annotation keywords real-world schemas carry (e.g. "examples" in
    // draft-07, vendor extensions) while the meta-schema still refuses malformed ones.
    // Schema patterns (`pattern`, `patternProperties`) run on RE2: linear in the argument, so a
    // pattern like ^(a+)+$ cannot freeze the worker on a model's argument (a backtracking RegExp
    // doubles its time with each character, in preflight, body and settle alike).
    const opts = { strict: false, allErrors: true, validateSchema: true, code: { regExp: re2RegExp } };
    ajv = dialect === '07' ? new Ajv(opts) : dialect === '2019' ? new Ajv2019(opts) : new Ajv2020(opts);
    if (dialect === '07') ajv.addMetaSchema(require('ajv/dist/refs/json-schema-draft-06.json'));
    addFormats(ajv as Ajv);
    validators.set(dialect, ajv);
  }
  return ajv;
}

/**
 * ajv's regExp engine for schema patterns: RE2 (re2js), searching as RegExp.test does. A pattern
 * RE2 cannot run (backreferences, lookahead, lookbehind) throws here, when the schema compiles,
 * so the tool is refused when it is defined or listed, never slow on a call.
 */
function re2RegExp(pattern: string, _flags: string): { test(s: string): boolean; toString(): string } {
  let re: RE2JS;
  try {
    re = RE2JS.compile(RE2JS.translateRegExp(pattern));
  } catch (err) {
    throw new Error(
      `the pattern ${JSON.stringify(pattern.length > 200 ? `${pattern.slice(0, 200)}…` : pattern)} cannot be checked in linear time (${messageOf(err)}): Sluice checks schema patterns with RE2, which has no backreferences or lookaround; rewrite the pattern without them`,
    );
  }
  return { test: (s: string) => re.matcher(s).find(), toString: () => `re2:${pattern}` };
}
// What ajv's standalone code would name the engine by; Sluice never generates standalone code.
re2RegExp.code = 'sluice/re2RegExp';

function isStandardSchema(x: unknown): x is StandardSchemaV1 {
  if (x === null || (typeof x !== 'object' && typeof x !== 'function')) return false;
  const std = (x as { '~standard'?: { validate?: unknown; version?: unknown } })['~standard'];
  return typeof std === 'object' && std !== null && typeof std.validate === 'function';
}

function isPlainObject(x: unknown): boolean {
  if (x === null || typeof x !== 'object' || Array.isArray(x)) return false;
  const proto = Object.getPrototypeOf(x);
  return proto === Object.prototype || proto === null;
}

function describe(x: unknown): string {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'an array';
  if (typeof x === 'object') return `an instance of ${(x as object).constructor?.name ?? 'an unknown class'}`;
  return typeof x;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Checks a call's arguments against its tool's schema (compiled once per schema). */
export function checkToolArgs(
  tool: { name: string; input: unknown; inputSchema?: JsonObject },
  args: unknown,
): ArgsCheck {
  return compileToolSchema(tool.name, tool.input, tool.inputSchema).check(args);
}
