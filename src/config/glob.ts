// Model-name globs: `*` any run of characters, `?` one character, case-insensitive, whole name. Compiled
// once per configuration (model-routing.ts).
export function globToRegExp(globs: readonly string[] | string): RegExp {
  const list = typeof globs === 'string' ? [globs] : globs;
  const alternatives = list.map((glob) =>
    glob
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '[\\s\\S]*')
      .replace(/\?/g, '[\\s\\S]'),
  );
  return new RegExp(`^(?:${alternatives.join('|')})$`, 'i');
}
