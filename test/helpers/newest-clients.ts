// The newest client majors (openai 7, ai 7 with @ai-sdk/openai 4, @openai/agents, Codex) need Node 22;
// the project runs on Node 20. test/clients/install.sh installs Node 22 from the npm registry and the
// clients under it; the tests run the clients' drivers (test/clients/*.mjs) and Codex as child
// processes of that Node, asynchronously (the gateway under test runs in the test's own process).
import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const clientsDirectory = fileURLToPath(new URL('../clients/', import.meta.url));
export const node22 = join(clientsDirectory, 'runtime/node_modules/.bin/node');
/** Codex's launcher, as `npx codex` runs it: it starts the Linux binary the package ships. */
export const codexLauncher = join(clientsDirectory, 'node_modules/@openai/codex/bin/codex.js');

/** Installs Node 22 and the clients from their lockfiles (skipped when unchanged). */
export function installNewestClients(): void {
  execFileSync('bash', [join(clientsDirectory, 'install.sh')], { stdio: 'inherit' });
}

export interface Finished {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs a program to its end, killed after `limitMs` (a hung client fails the test, not the run). */
export function runProgram(
  command: string,
  args: readonly string[],
  options: { cwd?: string; env?: Record<string, string>; limitMs?: number } = {},
): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd ?? clientsDirectory,
      env: {
        PATH: `${join(clientsDirectory, 'runtime/node_modules/.bin')}:${process.env.PATH ?? ''}`,
        ...options.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const limit = setTimeout(() => child.kill('SIGKILL'), options.limitMs ?? 120_000);
    child.on('error', reject);
    child.on('close', (status, signal) => {
      clearTimeout(limit);
      resolve({ status, signal, stdout, stderr });
    });
  });
}

/**
 * Runs a driver under Node 22 with its input as JSON; it prints one JSON line: what its user saw (the
 * answers, or the error the client threw, with its status and message).
 */
export async function runDriver<T>(script: string, input: Record<string, unknown>): Promise<T> {
  const finished = await runProgram(node22, [join(clientsDirectory, script), JSON.stringify(input)], {
    env: { OPENAI_AGENTS_DISABLE_TRACING: '1' },
  });
  const line = finished.stdout.trim().split('\n').at(-1) ?? '';
  if (finished.status !== 0 || line === '')
    throw new Error(
      `${script} exited with ${finished.status ?? finished.signal}: ${finished.stderr.slice(-2_000)}`,
    );
  return JSON.parse(line) as T;
}
