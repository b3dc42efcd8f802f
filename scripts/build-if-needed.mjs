// `npm start` runs the compiled server; this builds it first when dist/ is missing or older than src/.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function newestMtimeMs(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const mtimeMs = entry.isDirectory() ? newestMtimeMs(path) : statSync(path).mtimeMs;
    if (mtimeMs > newest) newest = mtimeMs;
  }
  return newest;
}

const output = 'dist/src/main.js';
if (!existsSync(output) || newestMtimeMs('src') > statSync(output).mtimeMs) {
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], {
    stdio: 'inherit',
  });
}
