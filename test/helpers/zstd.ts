// zstd as Codex writes a request body (the zstd crate, level 3): the libzstd of the Node 22 runtime the
// newest clients run under (Node 20 has none), so that tests send the bytes a real encoder makes.
import { execFileSync } from 'node:child_process';
import { node22 } from './newest-clients.js';

export function zstdCompress(bytes: Buffer | string): Buffer {
  return execFileSync(
    node22,
    [
      '-e',
      "const zlib = require('node:zlib'); process.stdout.write(zlib.zstdCompressSync(require('node:fs').readFileSync(0), { params: { [zlib.constants.ZSTD_c_compressionLevel]: 3 } }))",
    ],
    { input: bytes, maxBuffer: 64 * 1024 * 1024 },
  );
}
