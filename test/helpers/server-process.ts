// Starting and stopping the benchmark's server processes.
import { spawn, type ChildProcess } from 'node:child_process';

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Spawns a process that prints "READY <url>" (or, for ctxgate, a pino "ctxgate listening" line). */
export async function startServerProcess(
  command: string[],
  env: Record<string, string>,
): Promise<ServerProcess> {
  const [file, ...args] = command as [string, ...string[]];
  const child = spawn(file, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    let buffered = '';
    const onData = (data: Buffer): void => {
      buffered += data.toString();
      const ready =
        /READY (\S+)/.exec(buffered) ?? /"address":"([^"]+)".*"msg":"ctxgate listening"/.exec(buffered);
      if (ready?.[1] !== undefined) {
        // Keep draining stdout so the child never blocks on a full pipe.
        child.stdout?.removeListener('data', onData);
        child.stdout?.resume();
        resolve(ready[1].startsWith('http') ? ready[1] : `http://${ready[1]}/v1`);
      }
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) =>
      reject(new Error(`${command.join(' ')} exited with ${code} before it was ready`)),
    );
  });
  return {
    url,
    child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
