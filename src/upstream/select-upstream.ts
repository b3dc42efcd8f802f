// Routing: the first configured upstream whose model globs match the request's model, else the default.
import { globToRegExp } from '../config/glob.js';
import type { UpstreamConfig } from '../config/gateway-config.js';

/** Model names seen lately, per upstream list, and where they go: no glob is tested twice for a name. */
const routeCache = new WeakMap<readonly UpstreamConfig[], Map<string, UpstreamConfig>>();
const routeCacheSize = 4_096;

export function selectUpstream(upstreams: readonly UpstreamConfig[], model: string): UpstreamConfig {
  let cache = routeCache.get(upstreams);
  if (cache === undefined) routeCache.set(upstreams, (cache = new Map()));
  const known = cache.get(model);
  if (known !== undefined) return known;
  // Bounded: a client cycling through model names cannot grow it.
  if (cache.size >= routeCacheSize) cache.clear();
  for (const upstream of upstreams) {
    if (globToRegExp(upstream.modelGlobs).test(model)) {
      cache.set(model, upstream);
      return upstream;
    }
  }
  // The default upstream matches '*' and is always last, so this is only reached with an empty list.
  throw new Error('no upstream configured');
}
