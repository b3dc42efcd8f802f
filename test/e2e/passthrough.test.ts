// End to end (README.md): every /v1 path the gateway does not manage is forwarded untouched, so a client
// pointed at the gateway for chat uses the same base URL for embeddings, audio and files — through the
// official openai client, with gateway keys (the upstream sees only its own key), a body's model routing
// it to its upstream, uploads and binary answers crossing byte for byte, query strings kept.
import { randomBytes } from 'node:crypto';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeUpstream, type RecordedRequest } from '../helpers/fake-upstream.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';

const speech = randomBytes(300_000);

function answers(request: RecordedRequest) {
  if (request.path === '/v1/embeddings')
    return {
      status: 200,
      body: JSON.stringify({
        object: 'list',
        data: [{ object: 'embedding', index: 0, embedding: [0.25, -0.5] }],
        model: (JSON.parse(request.rawBody) as { model: string }).model,
        usage: { prompt_tokens: 2, total_tokens: 2 },
      }),
    };
  if (request.path === '/v1/audio/transcriptions')
    return { status: 200, body: JSON.stringify({ text: `received ${request.bodyBytes.length} bytes` }) };
  if (request.path === '/v1/audio/speech')
    return { status: 200, headers: { 'content-type': 'audio/mpeg' }, body: speech };
  if (request.path === '/v1/audio/voices')
    return { status: 200, body: JSON.stringify({ object: 'list', data: [], query: request.query }) };
  return undefined;
}

let main: FakeUpstream;
let embedder: FakeUpstream;
let harness: GatewayHarness;

beforeAll(async () => {
  main = new FakeUpstream({ requiredApiKey: 'sk-upstream', otherRoutes: answers });
  embedder = new FakeUpstream({ requiredApiKey: 'sk-upstream', otherRoutes: answers });
  const embedderUrl = await embedder.start();
  harness = await startGateway({
    env: {
      UPSTREAM_BASE_URL: await main.start(),
      UPSTREAM_API_KEY: 'sk-upstream',
      GATEWAY_API_KEYS: 'gk-client',
      EMBED_KEY: 'sk-upstream',
    },
    configYaml: `upstreams:\n  - name: embed\n    base_url: ${embedderUrl}\n    api_key_env: EMBED_KEY\n    models: ["embed-*"]\n`,
  });
  await waitUntilReady(harness);
});

afterAll(async () => {
  await harness.close();
  await main.stop();
  await embedder.stop();
});

const client = () => new OpenAI({ baseURL: harness.baseUrl, apiKey: 'gk-client', maxRetries: 0 });

describe('paths the gateway only forwards', () => {
  it('forwards embeddings to the upstream their model routes to, with that upstream’s key', async () => {
    const before = [main.requests.length, embedder.requests.length];
    const routed = await client().embeddings.create({
      model: 'embed-large',
      input: 'hello',
      encoding_format: 'float',
    });
    expect(routed.data[0]?.embedding).toEqual([0.25, -0.5]);
    const plain = await client().embeddings.create({
      model: 'text-embedding-3-small',
      input: 'hello',
      encoding_format: 'float',
    });
    expect(plain.model).toBe('text-embedding-3-small');
    const [toEmbedder] = embedder.requests.slice(before[1]);
    const [toMain] = main.requests.slice(before[0]);
    expect(toEmbedder?.path).toBe('/v1/embeddings');
    expect(JSON.parse(toEmbedder?.rawBody ?? '{}')).toEqual({
      model: 'embed-large',
      input: 'hello',
      encoding_format: 'float',
    });
    expect(toMain?.path).toBe('/v1/embeddings');
    // The gateway's key stays with the gateway: each upstream got its own.
    expect(toEmbedder?.headers.authorization).toBe('Bearer sk-upstream');
    expect(JSON.stringify(toEmbedder?.headers)).not.toContain('gk-client');
  });

  it('sends a body that gives its model twice as the gateway routed it: to that model’s upstream, naming it once', async () => {
    // JSON.parse keeps the last key; an upstream that reads the first would be asked for another model.
    const before = [main.requests.length, embedder.requests.length];
    const response = await fetch(`${harness.baseUrl}/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer gk-client' },
      body: '{"model":"text-embedding-3-small","input":"hello","model":"embed-large"}',
    });

    expect(response.status).toBe(200);
    expect(main.requests.length).toBe(before[0]);
    const [toEmbedder] = embedder.requests.slice(before[1]);
    expect(toEmbedder?.rawBody).toBe('{"model":"embed-large","input":"hello"}');
  });

  it('streams a multipart upload and a binary answer through byte for byte', async () => {
    const audio = randomBytes(200_000);
    const before = main.requests.length;
    const transcription = await client().audio.transcriptions.create({
      file: await toFile(audio, 'speech.wav'),
      model: 'whisper-1',
    });
    const [upload] = main.requests.slice(before);
    expect(upload?.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(upload?.bodyBytes.includes(audio)).toBe(true);
    expect(transcription.text).toBe(`received ${upload?.bodyBytes.length} bytes`);

    const spoken = await client().audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'hello' });
    expect(spoken.headers.get('content-type')).toBe('audio/mpeg');
    expect(Buffer.from(await spoken.arrayBuffer()).equals(speech)).toBe(true);
  });

  it('keeps the query string, and asks for the gateway key like chat does', async () => {
    const listed = await fetch(`${harness.baseUrl}/audio/voices?purpose=fine-tune&limit=2`, {
      headers: { authorization: 'Bearer gk-client' },
    });
    expect(((await listed.json()) as { query: string }).query).toBe('purpose=fine-tune&limit=2');
    const anonymous = await fetch(`${harness.baseUrl}/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model":"text-embedding-3-small","input":"x"}',
    });
    expect(anonymous.status).toBe(401);
    // Percent-encoded, the path is still the one authentication was decided for.
    const encoded = await fetch(`${harness.baseUrl.replace(/\/v1$/, '')}/%761/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model":"text-embedding-3-small","input":"x"}',
    });
    expect(encoded.status).toBe(401);
  });

  it('never forwards what the gateway manages, nor a path that climbs out of the upstream’s base', async () => {
    const before = main.requests.length;
    for (const path of ['/sessions', '/admin/budgets', '/context/other', '/files/..%2F..%2Fsecret']) {
      const response = await fetch(`${harness.baseUrl}${path}`, {
        method: 'PUT',
        headers: { authorization: 'Bearer gk-client', 'content-type': 'application/json' },
        body: '{}',
      });
      expect(response.status, path).toBe(404);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('not_found');
    }
    expect(main.requests.length).toBe(before);
  });
});
