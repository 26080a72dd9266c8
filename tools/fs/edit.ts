// edit: replaces an exact piece of text in a file the session has read, once fs/edit-intent
// allows it. The version check and the replacement use the same bytes, so nothing that changed
// in between can be overwritten.
import { z } from 'zod';
import { defineTool, type ToolContext, toolOutput, type ToolDefinition } from '../../define/config';
import { answering, ToolErrorCodes, ToolFailure } from '../errors';
import { loadFile, looksBinary } from './files';
import { writeAtomically } from './pinned';
import { askIntent, observationOf, recordObservation, versionOf, type EditIntentPolicy } from './ledger';
import { resolveInWorkspace, type Workspace } from './workspace';

const input = z.strictObject({
  file_path: z.string().min(1).describe('The file to edit: relative to the workspace root, or absolute inside it'),
  old_string: z
    .string()
    .min(1)
    .describe('The exact text to replace, copied from the file without the line-number prefixes read adds'),
  new_string: z.string().describe('The text to put in its place'),
  replace_all: z.boolean().optional().describe('Replace every occurrence instead of requiring exactly one'),
});
type EditArgs = z.infer<typeof input>;

export function editTool(
  workspace: () => Promise<Workspace>,
  policy: EditIntentPolicy,
  maxBytes: number,
): ToolDefinition<EditArgs> {
  return defineTool({
    name: 'edit',
    aliases: ['Edit'],
    description:
      'Replaces text in a file of the workspace: old_string must occur exactly once (include enough surrounding lines to make it unique), ' +
      'unless replace_all is set. You must have read the file in this session and it must not have changed since; ' +
      'after a successful edit you may edit the same file again without re-reading it.',
    input,
    presentCall: (a) => ({
      title: `Edit ${a.file_path}`,
      ...(a.replace_all ? { summary: 'replace all occurrences' } : {}),
    }),
    execute: (args, ctx) => answering(() => edit(args, ctx, workspace, policy, maxBytes)),
  });
}

/** Asks fs/edit-intent, then replaces and writes from the same bytes the intent was judged on. */
async function edit(
  args: EditArgs,
  ctx: ToolContext,
  workspace: () => Promise<Workspace>,
  policy: EditIntentPolicy,
  maxBytes: number,
) {
  const ws = await workspace();
  const target = await resolveInWorkspace(ws, args.file_path);
  const now = await loadFile(ws, target.rel, maxBytes);
  const observed = observationOf(ctx, target.rel);
  const decision = await askIntent('fs/edit-intent', policy, {
    tool: 'edit',
    path: target.rel,
    absolutePath: target.abs,
    current: now.disk,
    observed,
    args,
    ctx,
  });
  if (decision.kind === 'deny') throw new ToolFailure(decision.message, decision.code);
  const text = editableText(target.rel, now.bytes, args);
  const { updated, count } = replace(text, args.old_string, args.new_string, args.replace_all === true, target.rel);
  await writeAtomically(ws, target.rel, updated, now.mode);
  const version = versionOf(updated);
  // An edit shows the model no more of the file than it saw before; an unobserved file
  // (a custom policy let it through) counts as seen in part.
  recordObservation(ctx, target.rel, {
    state: 'present',
    version,
    partial: observed?.state === 'present' ? observed.partial : true,
  });
  return toolOutput({
    content: [{ type: 'text', text: `Edited ${target.rel}: replaced ${count} occurrence${count === 1 ? '' : 's'}.` }],
    meta: { path: target.rel, version, replacements: count },
  });
}

/** The file as text, or a failure saying why edit cannot change it (missing, binary, not UTF-8, a no-op edit). */
function editableText(rel: string, bytes: Buffer | undefined, args: EditArgs): string {
  if (!bytes)
    throw new ToolFailure(
      `${rel} does not exist, so there is nothing to edit. Use write to create it.`,
      ToolErrorCodes.FS_NOT_FOUND,
    );
  if (looksBinary(bytes))
    throw new ToolFailure(`${rel} is a binary file; edit changes text files only.`, ToolErrorCodes.FS_BINARY_FILE);
  if (args.old_string === args.new_string)
    throw new ToolFailure(
      'old_string and new_string are the same, so the edit would change nothing. Give the text that should replace it.',
      ToolErrorCodes.INVALID_ARGS,
    );
  const text = bytes.toString('utf8');
  if (!Buffer.from(text, 'utf8').equals(bytes))
    throw new ToolFailure(
      `${rel} is not valid UTF-8, so edit could not rewrite it without damaging other bytes. Change it with bash instead.`,
      ToolErrorCodes.FS_BINARY_FILE,
    );
  return text;
}

/** The replacement, or a failure saying how to fix old_string. Files with CRLF endings accept LF in the strings. */
function replace(
  text: string,
  oldString: string,
  newString: string,
  all: boolean,
  rel: string,
): { updated: string; count: number } {
  let from = oldString;
  let to = newString;
  let count = occurrences(text, from);
  if (count === 0 && text.includes('\r\n') && !from.includes('\r\n')) {
    from = from.replace(/\n/g, '\r\n');
    to = to.replace(/\r?\n/g, '\r\n');
    count = occurrences(text, from);
  }
  if (count === 0) {
    throw new ToolFailure(
      `old_string was not found in ${rel}. Copy the exact text from a fresh read (whitespace and indentation included, without the line-number prefixes), then retry.`,
      ToolErrorCodes.FS_NO_MATCH,
    );
  }
  if (count > 1 && !all) {
    throw new ToolFailure(
      `old_string occurs ${count} times in ${rel}. Include more surrounding lines to make it unique, or set replace_all to change every occurrence.`,
      ToolErrorCodes.FS_AMBIGUOUS_MATCH,
    );
  }
  // split/join, not String.replace: `$&` and friends in new_string must stay literal.
  const updated = all ? text.split(from).join(to) : spliceFirst(text, from, to);
  return { updated, count: all ? count : 1 };
}

function occurrences(text: string, s: string): number {
  let n = 0;
  for (let i = text.indexOf(s); i !== -1; i = text.indexOf(s, i + s.length)) n++;
  return n;
}

function spliceFirst(text: string, from: string, to: string): string {
  const i = text.indexOf(from);
  return text.slice(0, i) + to + text.slice(i + from.length);
}
