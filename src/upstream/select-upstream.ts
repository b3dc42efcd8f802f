// Routing: the first configured upstream whose model globs match the request's model, else the default.
import type { UpstreamConfig } from '../config/gateway-config.js';

const globCache = new WeakMap<readonly string[], RegExp>();

function globsToRegExp(globs: readonly string[]): RegExp {
  let pattern = globCache.get(globs);
  if (pattern === undefined) {
    const alternatives = globs.map((glob) =>
      glob
        .replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replace(/\*/g, '.*')
        .replace(/\?/g, '.'),
    );
    pattern = new RegExp(`^(?:${alternatives.join('|')})$`, 'i');
    globCache.set(globs, pattern);
  }
  return pattern;
}

export function selectUpstream(upstreams: readonly UpstreamConfig[], model: string): UpstreamConfig {
  for (const upstream of upstreams) if (globsToRegExp(upstream.modelGlobs).test(model)) return upstream;
  // The default upstream matches '*' and is always last, so this is only reached with an empty list.
  throw new Error('no upstream configured');
}
