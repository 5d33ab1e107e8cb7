import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findFreePort, waitForPort } from '#lib/runtime/listen.js';

export interface NginxOptions {
  /** An empty directory nginx may use for its config, pid file, logs and temp files. */
  dir: string;
  /** Directives at `http` level besides the server, e.g. `upstream` blocks. */
  http?: string;
  /** The inside of the one `server` block after its `listen` (the locations). */
  server: string;
}

export interface RunningNginx {
  url: string;
  port: number;
  /** Graceful shutdown (SIGQUIT); resolves once nginx has exited. */
  stop(): Promise<void>;
}

/**
 * Starts a real nginx (one worker, in the foreground) on a free loopback port, for the nginx suite and
 * bench:gateway. Nothing here imports tap, so the bench can use it too; the caller stops it.
 */
export async function startNginx({ dir, http = '', server }: NginxOptions): Promise<RunningNginx> {
  mkdirSync(join(dir, 'logs'), { recursive: true });
  const port = await findFreePort();
  const conf = join(dir, 'nginx.conf');
  const errorLog = join(dir, 'logs', 'error.log');
  writeFileSync(
    conf,
    `
${process.getuid?.() === 0 ? 'user root;' : ''}
daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${errorLog} warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  ${http}
  server {
    listen 127.0.0.1:${port};
    ${server}
  }
}
`,
  );
  const child = spawn('nginx', ['-c', conf, '-p', dir, '-e', errorLog], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGQUIT');
    await exited;
  };
  try {
    await waitForPort(port, '127.0.0.1', 5_000);
  } catch {
    await stop();
    let log = '';
    try {
      log = readFileSync(errorLog, 'utf8');
    } catch {
      /* nginx never opened it */
    }
    throw new Error(`nginx did not listen on ${port}: ${stderr}${log}`);
  }
  return { url: `http://127.0.0.1:${port}`, port, stop };
}
