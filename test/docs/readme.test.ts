// The README stays true: every error code of the error table, every environment variable the loader
// reads and every header the gateway reads are listed; its configuration example loads; its tables
// render (no blank line inside a table) here and in docs/.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.js';
import { errorCodes } from '../../src/errors.js';
import { writeConfigFile } from '../helpers/start-gateway.js';

const readme = readFileSync('README.md', 'utf8');
const docs = readdirSync('docs')
  .filter((name) => name.endsWith('.md'))
  .map((name) => ({
    name: `docs/${name}`,
    text: readFileSync(`docs/${name}`, 'utf8'),
  }));

function section(text: string, heading: string): string {
  const start = text.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`README has no section ${heading}`);
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}

describe('README', () => {
  it('lists every error code with its status', () => {
    const errors = section(readme, 'Errors');
    for (const [code, { status }] of Object.entries(errorCodes))
      expect(errors, code).toMatch(new RegExp(`\\| ${status} \\| \`${code}\` \\|`));
  });

  it('lists every environment variable the loader reads', () => {
    const loader = readFileSync('src/config/load-config.ts', 'utf8');
    const read = [...loader.matchAll(/readVariable\(env, '([A-Z_]+)'/g)].map((match) => match[1]);
    expect(read.length).toBeGreaterThan(10);
    const environment = section(readme, 'Environment');
    for (const name of new Set(read)) expect(environment, name).toContain(`| \`${name}\` |`);
  });

  it('lists every request header the gateway reads', () => {
    const parser = readFileSync('src/http/request-overrides.ts', 'utf8');
    const names = [...parser.matchAll(/'(x-[a-z-]+)'/g)].map((match) => match[1] as string);
    expect(names.length).toBeGreaterThan(4);
    const headers = section(readme, 'Headers').toLowerCase();
    for (const name of new Set(names)) expect(headers, name).toContain(`\`${name}\``);
  });

  it('shows a configuration example the gateway accepts', () => {
    const example = /## Configuration\n[\s\S]*?```yaml\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(example).toBeDefined();
    const config = loadConfig({ env: { CTXGATE_CONFIG: writeConfigFile(example as string) } });
    expect(config.upstreams.map((upstream) => upstream.name)).toContain('local');
  });

  it('keeps to about 300 lines', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(320);
  });

  it.each([{ name: 'README.md', text: readme }, ...docs])('$name: every table renders', ({ text }) => {
    const lines = text.split('\n');
    lines.forEach((line, index) => {
      // A table row right after a blank line that follows another row: the table was cut in two.
      if (line.startsWith('|') && lines[index - 1] === '' && (lines[index - 2] ?? '').startsWith('|'))
        throw new Error(`table broken by a blank line before line ${index + 1}: ${line.slice(0, 60)}`);
      // A header row needs its separator.
      if (line.startsWith('|') && !(lines[index - 1] ?? '').startsWith('|'))
        expect(lines[index + 1] ?? '', `separator after line ${index + 1}`).toMatch(/^\|(\s*:?-+:?\s*\|)+$/);
    });
  });

  it('links only to documents that exist', () => {
    for (const { name, text } of [{ name: 'README.md', text: readme }, ...docs]) {
      const base = name.startsWith('docs/') ? 'docs/' : '';
      for (const match of text.matchAll(/\]\(((?:\.\.\/)?[\w./-]+\.(?:md|yaml))(?:#[\w-]+)?\)/g)) {
        const target = (base + (match[1] as string)).replace(/^docs\/\.\.\//, '');
        expect(() => readFileSync(target), `${name} → ${target}`).not.toThrow();
      }
    }
  });
});

describe('the image', () => {
  it('runs the command npm start runs, flags included', () => {
    const start = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: { start: string } }).scripts
      .start;
    const cmd = /^CMD (\[.*\])$/m.exec(readFileSync('Dockerfile', 'utf8'))?.[1];
    expect(cmd, 'Dockerfile CMD in exec form').toBeDefined();
    expect(['exec', ...(JSON.parse(cmd as string) as string[])].join(' ')).toBe(start);
  });
});
