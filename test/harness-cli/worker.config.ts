// The worker behind the real harness CLIs (test/harness-cli-*.test.ts), in the test's process, or
// in a process of its own where a test kills it while approvals wait: harnessTools() judged by
// the Claude Code permission rules in the .claude/settings.json of SLUICE_TEST_POLICY_WS (a folder
// apart from the harnesses' project, so the harnesses do not read the rules themselves).
import { defineConfig } from '../../define/config';
import { harnessTools, permissionRules } from '../../hooks';

const rules = permissionRules({ workspace: process.env.SLUICE_TEST_POLICY_WS ?? process.cwd() });

export default defineConfig({ tools: harnessTools(), preExecute: [...rules.preExecute] });
