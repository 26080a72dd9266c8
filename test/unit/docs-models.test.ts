// docs/sessions.md's `models` block, run as written: its config defines, and every name it gives
// resolves to the adapter a session naming it gets (the AI SDK models wrapped, the OpenAI adapter
// with its options), while an unknown name lists the worker's names. The block is compiled with
// TypeScript and evaluated with its imports bound to the checkout's modules.
import { describe, expect, it } from 'vitest';
import ts from 'typescript';
import { resolveModel } from '../../agent/resolve';
import type { SluiceConfig } from '../../define/config';
import { docBlocks } from '../doc-blocks';

async function documentedConfig(): Promise<SluiceConfig> {
  const block = docBlocks('docs/sessions.md').find((b) => b.lang === 'ts' && /models: \{/.test(b.code));
  if (!block) throw new Error('docs/sessions.md has no block with a config’s models');
  const modules: Record<string, unknown> = {
    sluice: await import('../../index'),
    'sluice/agent': await import('../../agent/index'),
    '@ai-sdk/openai-compatible': await import('@ai-sdk/openai-compatible'),
  };
  const js = ts.transpileModule(block.code, {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
  }).outputText;
  const module = { exports: {} as { default?: SluiceConfig } };
  const require = (name: string) => {
    if (!(name in modules)) throw new Error(`the block imports ${name}, which this test does not bind`);
    return modules[name];
  };
  new Function('require', 'module', 'exports', js)(require, module, module.exports);
  if (!module.exports.default) throw new Error('the block exports no default config');
  return module.exports.default;
}

describe("docs/sessions.md: a config's models", () => {
  it('every name resolves to its adapter; an unknown one lists them', async () => {
    const config = await documentedConfig();
    const names = Object.keys(config.models ?? {});
    expect(names.length).toBeGreaterThanOrEqual(3);
    const ids = Object.fromEntries(names.map((n) => [n, resolveModel(n, config.models).id]));
    expect(ids).toEqual({
      'gpt-short': 'openai:gpt-4.1-mini',
      local: 'ollama.chat:llama3.1',
      qwen: 'ollama.chat:qwen3',
    });
    for (const n of names) expect(typeof resolveModel(n, config.models).step).toBe('function');
    expect(() => resolveModel('gpt-long', config.models)).toThrow(
      `unknown model "gpt-long": use openai:<model>, openai-responses:<model>, anthropic:<model>, script:<file>, or one of this worker's models (${names.join(', ')})`,
    );
  });
});
