// Routing: the first configured upstream whose model globs match the request's model, else the default.
import { globToRegExp } from '../config/glob.js';
import type { UpstreamConfig } from '../config/gateway-config.js';

export function selectUpstream(upstreams: readonly UpstreamConfig[], model: string): UpstreamConfig {
  for (const upstream of upstreams) if (globToRegExp(upstream.modelGlobs).test(model)) return upstream;
  // The default upstream matches '*' and is always last, so this is only reached with an empty list.
  throw new Error('no upstream configured');
}
