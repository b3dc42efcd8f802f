// The strict fake Anthropic as a process of its own (a `kind: anthropic` upstream for the benches).
// Prints "READY <base url>" when listening.
import { FakeAnthropic } from '../../test/helpers/fake-anthropic.js';

const fake = new FakeAnthropic({ window: Number(process.env.FAKE_WINDOW ?? '200000') });
const url = await fake.start();
process.stdout.write(`READY ${url}\n`);
process.on('SIGTERM', () => void fake.stop().then(() => process.exit(0)));
