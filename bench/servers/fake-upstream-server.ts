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
    : // Refused as Mistral refuses them (a 422 quoting each), not as OpenAI refuses a field it does not know.
      {
        forbiddenFields: process.env.FAKE_FORBIDDEN_FIELDS.split(','),
        extraFields: process.env.FAKE_FORBIDDEN_FIELDS.split(','),
      }),
  // A model that takes no stop sequences (as OpenAI's reasoning models), whose answer is long and streamed
  // in many chunks: what the gateway reads when it holds the answer to the client's stops itself.
  ...(process.env.FAKE_NO_STOP === undefined
    ? {}
    : {
        noStop: [process.env.FAKE_NO_STOP],
        respond: (_messages: unknown, body: Record<string, unknown>) =>
          body.model === process.env.FAKE_NO_STOP
            ? { content: 'q'.repeat(200_000), chunks: 2_000 }
            : undefined,
      }),
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
