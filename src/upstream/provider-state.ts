// Provider-side state under a shared key (docs/operations.md#provider-state): endpoints that create,
// list or read objects the provider keeps under the key that called it — files, batches, stored chat
// completions, assistants, vector stores, fine-tunes, realtime client secrets. When every tenant's call
// carries the operator's one upstream key, one tenant would list, read and delete another's objects,
// so these are refused unless the configuration says the deployment has one tenant.

/** The endpoint families that keep state on the provider, by the name the config lists them under. */
export const providerStateEndpoints = [
  'files',
  'uploads',
  'batches',
  'assistants',
  'threads',
  'vector_stores',
  'fine_tuning',
  'containers',
  'conversations',
  'evals',
  'videos',
  'realtime',
  'organization',
  'chat/completions',
  'models',
] as const;

export type ProviderStateEndpoint = (typeof providerStateEndpoints)[number];

const byFirstSegment = new Set<string>(providerStateEndpoints.filter((name) => !name.includes('/')));

/**
 * The provider-state family a forwarded call belongs to (segments below /v1, as normalised), or
 * undefined for a stateless one (embeddings, moderations, audio, images, legacy completions, the
 * model list and a model's card).
 */
export function providerStateEndpoint(
  method: string,
  segments: readonly string[],
): ProviderStateEndpoint | undefined {
  const first = segments[0]?.toLowerCase();
  if (first === undefined) return undefined;
  // Reading the model list or a model is stateless; deleting a fine-tuned model is not.
  if (first === 'models') return method === 'GET' ? undefined : 'models';
  // Stored chat completions: listed, read, updated and deleted below /chat/completions.
  if (first === 'chat' && segments[1]?.toLowerCase() === 'completions') return 'chat/completions';
  return byFirstSegment.has(first) ? (first as ProviderStateEndpoint) : undefined;
}
