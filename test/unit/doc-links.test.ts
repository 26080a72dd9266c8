// Every relative link in README.md and docs/*.md points at a file that exists, and a `#anchor`
// into a Markdown file at one of its headings: the front door and the docs send readers nowhere
// that is not there (issue 24 item 7).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.join(__dirname, '..', '..');
const pages = [
  'README.md',
  ...fs
    .readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's heading slugs: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function slugs(markdown: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of stripCode(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = m[1]
      .toLowerCase()
      .replace(/<[^>]+>/g, '')
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

/** Fenced code blocks hold no links (and no headings). */
function stripCode(markdown: string): string {
  return markdown.replace(/^(```|~~~)[\s\S]*?^\1/gm, '');
}

function links(markdown: string): string[] {
  const text = stripCode(markdown).replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]);
}

describe('links in README.md and docs/', () => {
  it('every relative link names an existing file, and every #anchor an existing heading', () => {
    const problems: string[] = [];
    let checked = 0;
    for (const page of pages) {
      const text = fs.readFileSync(path.join(ROOT, page), 'utf8');
      for (const link of links(text)) {
        if (/^[a-z][a-z+.-]*:/i.test(link)) continue; // https:, mailto: …
        checked++;
        const [file, anchor] = link.split('#');
        const target = file
          ? path.resolve(path.dirname(path.join(ROOT, page)), decodeURIComponent(file))
          : path.join(ROOT, page);
        if (!fs.existsSync(target)) {
          problems.push(`${page}: ${link} (no such file)`);
          continue;
        }
        if (anchor && target.endsWith('.md') && !slugs(fs.readFileSync(target, 'utf8')).has(anchor.toLowerCase()))
          problems.push(`${page}: ${link} (no heading #${anchor} in ${path.relative(ROOT, target)})`);
      }
    }
    expect(checked).toBeGreaterThan(30);
    expect(problems).toEqual([]);
  });

  it('the checker finds a link to a missing file and an anchor with no heading', () => {
    expect(links('see [x](docs/nowhere.md) and `[y](z.md)`\n```\n[w](v.md)\n```\n')).toEqual(['docs/nowhere.md']);
    expect(
      slugs('# The API on one screen\n## Faults, bad input, large results\n## Faults, bad input, large results'),
    ).toEqual(new Set(['the-api-on-one-screen', 'faults-bad-input-large-results', 'faults-bad-input-large-results-1']));
  });
});
