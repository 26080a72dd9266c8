// write: creates or replaces a whole file, atomically, once fs/write-intent allows it.
import { z } from 'zod';
import { defineTool, toolOutput, type ToolDefinition } from '../../define/config';
import { answering, ToolFailure } from '../errors';
import { loadFile } from './files';
import { writeAtomically } from './pinned';
import { askIntent, observationOf, recordObservation, versionOf, type WriteIntentPolicy } from './ledger';
import { resolveInWorkspace, type Workspace } from './workspace';

const input = z.strictObject({
  file_path: z.string().min(1).describe('The file to write: relative to the workspace root, or absolute inside it'),
  content: z.string().describe('The complete new content of the file'),
});

export function writeTool(
  workspace: () => Promise<Workspace>,
  policy: WriteIntentPolicy,
  maxBytes: number,
): ToolDefinition<z.infer<typeof input>> {
  return defineTool({
    name: 'write',
    aliases: ['Write'],
    description:
      'Writes a whole file in the workspace, creating it (and its folders) or replacing it. ' +
      'To replace an existing file you must have read all of it first in this session, and it must not have changed since; ' +
      'to change part of a file, prefer edit.',
    input,
    presentCall: (a) => ({ title: `Write ${a.file_path}`, summary: `${Buffer.byteLength(a.content)} bytes` }),
    execute: (args, ctx) =>
      answering(async () => {
        const ws = await workspace();
        const target = await resolveInWorkspace(ws, args.file_path);
        const now = await loadFile(ws, target.rel, maxBytes);
        const decision = await askIntent('fs/write-intent', policy, {
          tool: 'write',
          path: target.rel,
          absolutePath: target.abs,
          current: now.disk,
          observed: observationOf(ctx, target.rel),
          args,
          ctx,
        });
        if (decision.kind === 'deny') throw new ToolFailure(decision.message, decision.code);

        await writeAtomically(ws, target.rel, args.content, now.mode);
        const version = versionOf(args.content);
        recordObservation(ctx, target.rel, { state: 'present', version, partial: false });
        const bytes = Buffer.byteLength(args.content);
        return toolOutput({
          content: [
            {
              type: 'text',
              text: `${now.disk.state === 'absent' ? 'Created' : 'Replaced'} ${target.rel} (${bytes} bytes).`,
            },
          ],
          meta: { path: target.rel, version, created: now.disk.state === 'absent', bytes },
        });
      }),
  });
}
