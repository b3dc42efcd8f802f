// Section "decode": what turning a request body's UTF-8 bytes into the text JSON.parse reads costs, on
// the Node running the bench, for the decoder the gateway picks (`decodeUtf8` in src/json-body.ts)
// beside Node's own decoder (the baseline: what any server that reads JSON does) and ICU's transcoder,
// in interleaved rounds. Which is faster depends on the Node version (Node's own is vectorized from
// 24.14, 25.3 and 26 on), so run it under the Node you deploy: `PATH=<node 26's bin>:$PATH npm run
// bench -- decode` (docs/operations.md). Figures only.
import { transcode } from 'node:buffer';
import { decodeUtf8, nodeDecodesUtf8Fast } from '../../src/json-body.js';
import { benchConversation, chatBody } from '../lib/bodies.js';
import { median, wideRow } from '../lib/load.js';

const rounds = 7;

function bodyOf(unit: string, bytes: number): Buffer {
  const message = JSON.stringify({ role: 'user', content: unit.repeat(Math.ceil(3_000 / unit.length)) });
  const count = Math.max(1, Math.round(bytes / Buffer.byteLength(message)));
  return Buffer.from(`{"model":"m","messages":[${Array<string>(count).fill(message).join(',')}]}`);
}

/** Microseconds per decode of `bytes` by `decode`, repeated to about 40 MB of work. */
function timed(bytes: Buffer, decode: (bytes: Buffer) => string): number {
  const times = Math.max(3, Math.round(40_000_000 / bytes.length));
  let length = 0;
  const started = process.hrtime.bigint();
  for (let time = 0; time < times; time++) length += decode(bytes).length;
  const elapsed = Number(process.hrtime.bigint() - started) / 1000 / times;
  // Used, so the decoding cannot be left out.
  return length > 0 ? elapsed : Number.NaN;
}

export async function decodeSection(): Promise<void> {
  const bodies: Record<string, Buffer> = {
    '2 KB chat request (ASCII)': Buffer.from(chatBody(false)),
    '2 KB with typographic quotes': bodyOf('The “café” module — it fits. ', 2_000),
    'proxy conversation (~10% multi-byte)': Buffer.from(
      JSON.stringify({ model: 'gpt-4o-mini', messages: benchConversation(600, 330), stream: false }),
    ),
    '200 KB of Chinese': bodyOf('上下文网关把每个请求放进模型的窗口里，保留最新的回合。', 200_000),
    '200 KB of Russian': bodyOf('Шлюз укладывает каждый запрос в окно модели. ', 200_000),
    '4 MB, a few accented words': bodyOf('The gateway fits every request — déjà vu. ', 4_000_000),
  };
  const decoders: Record<string, (bytes: Buffer) => string> = {
    'Node (toString)': (bytes) => bytes.toString('utf8'),
    'ICU transcode': (bytes) => transcode(bytes, 'utf8', 'ucs2').toString('ucs2'),
    decodeUtf8: (bytes) => decodeUtf8(bytes),
  };
  const fast = nodeDecodesUtf8Fast(process.versions.node);
  console.log(
    `\n== decode (node ${process.version}): µs to decode a request body, median of ${rounds} interleaved rounds; ` +
      `decodeUtf8 picks ${fast ? "Node's decoder" : "ICU's transcoder"} for non-ASCII bodies here ==`,
  );
  console.log(
    wideRow(['body', 'KB', ...Object.keys(decoders).map((name) => `${name} µs`), 'decodeUtf8/Node']),
  );
  for (const [label, bytes] of Object.entries(bodies)) {
    const samples = new Map<string, number[]>(Object.keys(decoders).map((name) => [name, []]));
    for (let round = 0; round < rounds; round++)
      for (const [name, decode] of round % 2 === 0
        ? Object.entries(decoders)
        : Object.entries(decoders).reverse())
        samples.get(name)?.push(timed(bytes, decode));
    const medians = [...samples.values()].map((values) => median(values));
    const [node = Number.NaN, , picked = Number.NaN] = medians;
    console.log(
      wideRow([
        label,
        (bytes.length / 1024).toFixed(0),
        ...medians.map((value) => value.toFixed(1)),
        (picked / node).toFixed(2),
      ]),
    );
  }
}
