// What the pass-through may forward (docs/operations.md#pass-through): a request target below /v1,
// decoded and normalised the way a router or a provider might read it — percent-encoding (an encoded
// slash too), empty and dot segments, letter case — before anything is decided. A path that normalises
// to one of the gateway's own endpoints is never forwarded, however it was spelled: forwarding
// `/v1/chat%2Fcompletions` would skip fitting, sessions and budgets. What is forwarded is the normal
// form, so the provider reads exactly the path that was judged.

/** Why a path is not forwarded, or the path to forward (with its query string). */
export type ForwardedPath =
  { kind: 'forward'; path: string; segments: readonly string[] } | { kind: 'managed' } | { kind: 'invalid' };

/**
 * The gateway's own endpoints, by their first segment below /v1: every method and every path under them.
 * `chat/completions` is the gateway's only for POST (a chat completion); its other methods and sub-paths
 * are the provider's stored completions (provider-state.ts).
 */
const managedFirstSegments = new Set(['sessions', 'admin', 'context', 'responses', 'messages']);

/** Segments decoded until no percent-encoding is left, so a double-encoded name cannot pass as another. */
function decodedSegments(rawPath: string): string[] | undefined {
  const segments: string[] = [];
  for (const raw of rawPath.split('/')) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(raw);
    } catch {
      return undefined;
    }
    // Still percent-encoded after one decoding: a provider that decodes again would read another path.
    if (decoded.includes('%') || decoded.includes('\\')) return undefined;
    for (const piece of decoded.split('/')) {
      if (piece === '' || piece === '.') continue;
      if (piece === '..') return undefined;
      for (let index = 0; index < piece.length; index++) {
        const code = piece.charCodeAt(index);
        if (code < 0x20 || code === 0x7f) return undefined;
      }
      segments.push(piece);
    }
  }
  return segments;
}

/** The request target's path without scheme and host (absolute-form targets name them). */
function pathOfTarget(target: string): { path: string; query: string } | undefined {
  const queryAt = target.indexOf('?');
  let path = queryAt === -1 ? target : target.slice(0, queryAt);
  const query = queryAt === -1 ? '' : target.slice(queryAt);
  if (!path.startsWith('/')) {
    try {
      path = new URL(path).pathname;
    } catch {
      return undefined;
    }
  }
  return { path, query };
}

/** True when `segments` (below /v1, any case) name one of the gateway's own endpoints for `method`. */
export function isManagedPath(method: string, segments: readonly string[]): boolean {
  const first = segments[0]?.toLowerCase();
  if (first === undefined) return false;
  if (managedFirstSegments.has(first)) return true;
  return (
    method === 'POST' &&
    first === 'chat' &&
    segments.length === 2 &&
    segments[1]?.toLowerCase() === 'completions'
  );
}

/**
 * The path to forward for a request target that the router matched under /v1 (`/v1/...`, however
 * spelled), or why it is not forwarded.
 */
export function forwardedPath(method: string, target: string): ForwardedPath {
  const parts = pathOfTarget(target);
  if (parts === undefined) return { kind: 'invalid' };
  const segments = decodedSegments(parts.path);
  if (segments === undefined || segments[0]?.toLowerCase() !== 'v1') return { kind: 'invalid' };
  const below = segments.slice(1);
  if (below.length === 0) return { kind: 'invalid' };
  if (isManagedPath(method, below)) return { kind: 'managed' };
  return {
    kind: 'forward',
    path: `/${below.map(encodeURIComponent).join('/')}${parts.query}`,
    segments: below,
  };
}
