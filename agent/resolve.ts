// From a session's model string to an adapter. The adapters load their SDK on first use only.
import { aiSdkModel } from './adapters/ai-sdk';
import { anthropicModel } from './adapters/anthropic';
import { openAIChatModel, openAIResponsesModel } from './adapters/openai';
import { scriptFileModel } from './adapters/scripted';
import { isAISDKModel, type ModelAdapter, type ModelEntry, ModelRefusedError } from './models';

/**
 * The adapter for a session's model string: a name from the worker's `models`, else
 * `openai:<model>` (chat completions), `openai-responses:<model>`, `anthropic:<model>`,
 * `script:<file>`. Credentials come from the worker's environment (OPENAI_API_KEY,
 * ANTHROPIC_API_KEY, and the SDKs' *_BASE_URL), never from the session.
 */
export function resolveModel(spec: string, models: Record<string, ModelEntry> = {}): ModelAdapter {
  const named = Object.hasOwn(models, spec) ? models[spec] : undefined;
  if (named) return isAISDKModel(named) ? aiSdkModel(named) : named;
  const colon = spec.indexOf(':');
  const provider = colon > 0 ? spec.slice(0, colon) : '';
  const name = colon > 0 ? spec.slice(colon + 1) : '';
  if (!name) throw new ModelRefusedError(unknownModel(spec, models));
  switch (provider) {
    case 'openai':
      return openAIChatModel(name);
    case 'openai-responses':
      return openAIResponsesModel(name);
    case 'anthropic':
      return anthropicModel(name);
    case 'script':
      return scriptFileModel(name);
    default:
      throw new ModelRefusedError(unknownModel(spec, models));
  }
}

function unknownModel(spec: string, models: Record<string, ModelEntry>): string {
  const names = Object.keys(models);
  return `unknown model ${JSON.stringify(spec)}: use openai:<model>, openai-responses:<model>, anthropic:<model>, script:<file>${names.length ? `, or one of this worker's models (${names.join(', ')})` : ''}`;
}
