// Which forwarded calls keep state on the provider under the key that sent them.
import { describe, expect, it } from 'vitest';
import { providerStateEndpoint } from '../../src/upstream/provider-state.js';

describe('providerStateEndpoint', () => {
  it.each([
    ['GET', ['files'], 'files'],
    ['DELETE', ['files', 'file-1'], 'files'],
    ['POST', ['uploads', 'upload-1', 'parts'], 'uploads'],
    ['POST', ['batches'], 'batches'],
    ['GET', ['Vector_Stores'], 'vector_stores'],
    ['POST', ['fine_tuning', 'jobs'], 'fine_tuning'],
    ['POST', ['realtime', 'client_secrets'], 'realtime'],
    ['GET', ['chat', 'completions'], 'chat/completions'],
    ['POST', ['chat', 'completions', 'chatcmpl-1'], 'chat/completions'],
    ['DELETE', ['models', 'ft:gpt-4o-mini:acme'], 'models'],
    ['GET', ['organization', 'usage', 'completions'], 'organization'],
  ] as const)('%s /v1/%s is %s', (method, segments, endpoint) => {
    expect(providerStateEndpoint(method, segments)).toBe(endpoint);
  });

  it.each([
    ['POST', ['embeddings']],
    ['POST', ['moderations']],
    ['POST', ['audio', 'speech']],
    ['POST', ['images', 'generations']],
    ['POST', ['completions']],
    ['GET', ['models']],
    ['GET', ['models', 'gpt-4o']],
    ['POST', ['rerank']],
  ] as const)('%s /v1/%s is stateless', (method, segments) => {
    expect(providerStateEndpoint(method, segments)).toBeUndefined();
  });
});
