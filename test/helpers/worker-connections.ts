import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import http from 'node:http';

/**
 * Requests on a new connection each, told apart by the worker process that held the server side
 * of it (read from /proc while the kept-alive connection is still open): what a test of
 * `--workers N` needs to show that a replay reached another worker than the first use.
 */
export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The pid of the process that served the connection (undefined if it could not be told). */
  worker: number | undefined;
}

/** A process and all its descendants (the CLI's primary and its workers). */
export function processTree(pid: number): number[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    let tasks: string[];
    try {
      tasks = readdirSync(`/proc/${out[i]}/task`);
    } catch {
      continue;
    }
    for (const task of tasks) {
      try {
        const children = readFileSync(`/proc/${out[i]}/task/${task}/children`, 'utf8').trim();
        if (children) out.push(...children.split(/\s+/).map(Number));
      } catch {
        // the task ended meanwhile
      }
    }
  }
  return out;
}

/** Which of `pids` holds the server side of the TCP connection from `clientPort` to `serverPort`. */
function ownerOf(serverPort: number, clientPort: number, pids: number[]): number | undefined {
  let inode: string | undefined;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let lines: string[];
    try {
      lines = readFileSync(file, 'utf8').split('\n').slice(1);
    } catch {
      continue;
    }
    for (const line of lines) {
      const columns = line.trim().split(/\s+/);
      if (columns.length < 10) continue;
      const local = parseInt(columns[1]!.split(':').pop()!, 16);
      const remote = parseInt(columns[2]!.split(':').pop()!, 16);
      if (local === serverPort && remote === clientPort) inode = columns[9];
    }
  }
  if (!inode) return undefined;
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === `socket:[${inode}]`) return pid;
      } catch {
        // closed meanwhile
      }
    }
  }
  return undefined;
}

/** One request on a new connection to a server whose processes are `tree()`; `worker` says which served it. */
export function onNewConnection(
  url: string,
  tree: () => number[],
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const target = new URL(url);
  return new Promise<Answer>((resolve, reject) => {
    const request = http.request(
      {
        hostname: target.hostname,
        port: target.port,
        path: target.pathname + target.search,
        method: options.method ?? 'GET',
        headers: options.headers ?? {},
        agent,
      },
      (response) => {
        // Read now: once the answer ends, the kept-alive socket goes back to the agent.
        const clientPort = response.socket.localPort!;
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => {
          const worker = ownerOf(Number(target.port), clientPort, tree());
          agent.destroy();
          resolve({ status: response.statusCode!, headers: response.headers, text, worker });
        });
      },
    );
    request.on('error', (error) => {
      agent.destroy();
      reject(error);
    });
    request.end(options.body);
  });
}

/**
 * Sends `replay` on new connections until one is served by another worker than `first` (at most
 * `tries`), and returns every answer: the caller checks that all of them were refused.
 */
export async function replayElsewhere(
  first: number | undefined,
  replay: () => Promise<Answer>,
  tries = 8,
): Promise<{ answers: Answer[]; elsewhere: number }> {
  const answers: Answer[] = [];
  for (let i = 0; i < tries; i++) {
    const answer = await replay();
    answers.push(answer);
    if (answer.worker !== undefined && answer.worker !== first) break;
  }
  return { answers, elsewhere: answers.filter((a) => a.worker !== undefined && a.worker !== first).length };
}
