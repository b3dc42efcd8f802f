// End to end (README.md, errors; docs/configuration.md, `unknown_models`): a model name no entry knows.
// By default its window is assumed and the assumption is logged once per model name; with
// `unknown_models: reject` it is refused with a 400 the OpenAI client maps to BadRequestError — unless the
// request states its window itself.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { startGateway, waitUntilReady, type GatewayHarness } from '../helpers/start-gateway.js';

let fake: FakeUpstream;
let assuming: GatewayHarness;
let rejecting: GatewayHarness;

beforeAll(async () => {
  fake = new FakeUpstream();
  const env = { UPSTREAM_BASE_URL: await fake.start(), REDIS_URL: inject('redisUrl') };
  assuming = await startGateway({ env });
  rejecting = await startGateway({ env, configYaml: 'unknown_models: reject\n' });
  await waitUntilReady(assuming);
  await waitUntilReady(rejecting);
});

afterAll(async () => {
  await assuming.close();
  await rejecting.close();
  await fake.stop();
});

const ask = (harness: GatewayHarness, model: string, headers: Record<string, string> = {}) =>
  new OpenAI({
    baseURL: harness.baseUrl,
    apiKey: 'sk-unknown',
    maxRetries: 0,
    defaultHeaders: headers,
  }).chat.completions
    .create({ model, messages: [{ role: 'user', content: 'Hello?' }] })
    .catch((error: unknown) => error);

describe('unknown model names', () => {
  it('assumes a window and says so in the log, once per model', async () => {
    for (const model of ['zeta-9', 'zeta-9', 'zeta-9', 'omega-1', 'gpt-4o-mini'])
      expect(await ask(assuming, model)).not.toBeInstanceOf(Error);
    const notices = assuming.logLines
      .filter((line) => line.includes('unknown model'))
      .map((line) => JSON.parse(line) as { model: string; assumedWindow: number });
    expect(notices.map((notice) => notice.model)).toEqual(['zeta-9', 'omega-1']);
    expect(notices[0]?.assumedWindow).toBe(128_000);
  });

  it('with unknown_models: reject, refuses them with 400 unknown_model unless the window is stated', async () => {
    const refused = await ask(rejecting, 'zeta-9');
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('unknown_model');
    expect((refused as Error).message).toContain('X-Context-Window');
    expect(await ask(rejecting, 'zeta-9', { 'x-context-window': '8192' })).not.toBeInstanceOf(Error);
    expect(await ask(rejecting, 'gpt-4o-mini')).not.toBeInstanceOf(Error);
  });
});
