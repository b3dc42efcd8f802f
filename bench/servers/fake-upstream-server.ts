// The fake provider as a process of its own, so it does not share an event loop with what is measured.
// Prints "READY <base url>" when listening.
import { FakeUpstream } from '../../test/helpers/fake-upstream.js';

const fake = new FakeUpstream({ recordLimit: 0, tokenCounting: 'approximate' });
fake.setDefault({
  content: process.env.FAKE_CONTENT ?? 'ok',
  chunks: Number(process.env.FAKE_CHUNKS ?? '5'),
});
const url = await fake.start(Number(process.env.PORT ?? '0'));
process.stdout.write(`READY ${url}\n`);
process.on('SIGTERM', () => void fake.stop().then(() => process.exit(0)));
