// Model-name globs: `*` any run of characters, `?` one character, case-insensitive, whole name.
const cache = new Map<string, RegExp>();

export function globToRegExp(globs: readonly string[] | string): RegExp {
  const list = typeof globs === 'string' ? [globs] : globs;
  const key = list.join('\u0000');
  let pattern = cache.get(key);
  if (pattern === undefined) {
    const alternatives = list.map((glob) =>
      glob
        .replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replace(/\*/g, '[\\s\\S]*')
        .replace(/\?/g, '[\\s\\S]'),
    );
    pattern = new RegExp(`^(?:${alternatives.join('|')})$`, 'i');
    cache.set(key, pattern);
  }
  return pattern;
}
