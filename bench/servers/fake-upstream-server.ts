// The fake provider as a process of its own, so it does not share an event loop with what is measured.
// Prints "READY <base url>" when listening.
import { FakeUpstream } from '../../test/helpers/fake-upstream.js';

const fake = new FakeUpstream({
  recordLimit: 0,
  tokenCounting: 'approximate',
  ...(process.env.FAKE_WINDOW === undefined ? {} : { defaultWindow: Number(process.env.FAKE_WINDOW) }),
  // Fields refused as Mistral refuses them: a 422 that quotes each one's value back.
  ...(process.env.FAKE_FORBIDDEN_FIELDS === undefined
    ? {}
    : { forbiddenFields: process.env.FAKE_FORBIDDEN_FIELDS.split(',') }),
  // Pass-through paths (embeddings) answered as OpenAI does, with their usage.
  otherRoutes: (request) =>
    request.path === '/v1/embeddings'
      ? {
          status: 200,
          body: '{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5]}],"model":"e","usage":{"prompt_tokens":3,"total_tokens":3}}',
        }
      : undefined,
});
fake.setDefault({
  content: process.env.FAKE_CONTENT ?? 'ok',
  chunks: Number(process.env.FAKE_CHUNKS ?? '5'),
});
const url = await fake.start(Number(process.env.PORT ?? '0'));
process.stdout.write(`READY ${url}\n`);
process.on('SIGTERM', () => void fake.stop().then(() => process.exit(0)));
