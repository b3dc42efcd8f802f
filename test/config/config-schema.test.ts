// The config file's schema (config-schema.ts) against the documents that promise it: every key the
// file may hold, at any depth, is named in docs/ (a section's keys by their full path in backticks, as
// the configuration tables write them; deeper keys by name), and the sample file config/ctxgate.yaml
// holds only keys the schema knows.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parse } from 'yaml';
import { configFileSchema } from '../../src/config/config-schema.js';

/** Every key of an object schema and of the objects nested in it (through optional, default, array, record). */
function keysOf(schema: z.ZodType, path = ''): string[] {
  if (schema instanceof z.ZodObject)
    return Object.entries(schema.shape as Record<string, z.ZodType>).flatMap(([key, inner]) => [
      `${path}${key}`,
      ...keysOf(inner, `${path}${key}.`),
    ]);
  if (schema instanceof z.ZodOptional || schema instanceof z.ZodDefault || schema instanceof z.ZodNullable)
    return keysOf(schema.unwrap() as z.ZodType, path);
  if (schema instanceof z.ZodArray) return keysOf(schema.element as z.ZodType, `${path}[].`);
  if (schema instanceof z.ZodRecord) return keysOf(schema.valueType as z.ZodType, `${path}<name>.`);
  return [];
}

const docs = readdirSync(new URL('../../docs/', import.meta.url))
  .filter((name) => name.endsWith('.md'))
  .map((name) => readFileSync(new URL(`../../docs/${name}`, import.meta.url), 'utf8'))
  .join('\n');

const paths = keysOf(configFileSchema);

describe('the config file', () => {
  it('has its keys found at every depth (the walk reaches nested sections)', () => {
    expect(paths).toContain('server.body_limit_bytes');
    expect(paths).toContain('models.[].fallbacks');
    expect(paths).toContain('policies.<name>.keep_last');
    expect(paths.length).toBeGreaterThan(60);
  });

  // A section's own keys by their full path, as the docs tables write them (`server.body_limit_bytes`,
  // `models[].fallbacks`); a key deeper in (a policy knob, a budget's `limit`, a list entry's key) by
  // its own name, in backticks or as the key of a YAML example.
  const mentioned = (path: string): boolean => {
    if (docs.includes(`\`${path.replaceAll('.[]', '[]')}`)) return true;
    if (!path.includes('<name>') && path.split('.').length <= 2 && !path.startsWith('context.')) return false;
    const key = path.split('.').at(-1) as string;
    return (
      docs.includes(`\`${key}\``) ||
      new RegExp(`(^|[\\s{,-])${key}:`, 'm').test(docs) ||
      new RegExp(`[{,] ?${key} ?[,}]`).test(docs)
    );
  };
  it.each(paths)('documents `%s`', (path) => {
    expect(mentioned(path)).toBe(true);
  });

  it('ships a sample the schema accepts as it is', () => {
    const sample: unknown = parse(
      readFileSync(new URL('../../config/ctxgate.yaml', import.meta.url), 'utf8'),
    );
    const result = configFileSchema.safeParse(sample ?? {});
    expect(result.success ? [] : result.error.issues.map((issue) => issue.path.join('.'))).toEqual([]);
  });
});
