import { createWriteStream, existsSync, readFileSync, type WriteStream } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * One container instance's log: each line stored as "<RFC3339 timestamp> <text>", the shape the
 * CRI log files have, so `timestamps`, `sinceSeconds` and `tailLines` can be answered later.
 * A final line without a newline is stored without one.
 */
export class ContainerLogWriter {
  private readonly out: WriteStream;
  private readonly partial = new Map<Readable, string>();

  constructor(readonly file: string) {
    this.out = createWriteStream(file, { flags: 'a' });
  }

  attach(stream: Readable): void {
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      const text = (this.partial.get(stream) ?? '') + chunk;
      const lines = text.split('\n');
      this.partial.set(stream, lines.pop() ?? '');
      for (const line of lines) this.out.write(`${new Date().toISOString()} ${line}\n`);
    });
  }

  /** Writes pending partial lines and closes the file. */
  async close(): Promise<void> {
    for (const rest of this.partial.values()) {
      if (rest) this.out.write(`${new Date().toISOString()} ${rest}`);
    }
    this.partial.clear();
    await new Promise<void>((resolve) => this.out.end(resolve));
  }
}

export interface LogQuery {
  readonly tailLines?: number;
  readonly limitBytes?: number;
  readonly timestamps?: boolean;
  readonly sinceTime?: Date;
  readonly follow?: boolean;
}

interface LogLine {
  readonly time: string;
  readonly text: string;
}

function parseLines(content: string): LogLine[] {
  if (!content) return [];
  const raw = content.split('\n');
  const last = raw.pop() ?? '';
  const lines = raw.map((line) => ({ line, newline: true }));
  if (last) lines.push({ line: last, newline: false });
  return lines.map(({ line, newline }) => {
    const space = line.indexOf(' ');
    return { time: line.slice(0, space), text: line.slice(space + 1) + (newline ? '\n' : '') };
  });
}

function render(line: LogLine, timestamps: boolean | undefined): string {
  return timestamps ? `${line.time} ${line.text}` : line.text;
}

/**
 * Writes the log to `out` as the kubelet's /containerLogs does. With `follow`, keeps reading
 * appended lines until `isDone()` says the container has exited and everything was sent.
 */
export async function streamContainerLog(
  file: string,
  query: LogQuery,
  out: Writable,
  isDone: () => boolean,
  signal: AbortSignal,
): Promise<void> {
  let budget = query.limitBytes ?? Number.POSITIVE_INFINITY;
  const send = (text: string): boolean => {
    if (budget <= 0) return false;
    const bytes = Buffer.from(text);
    const slice = bytes.length > budget ? bytes.subarray(0, budget) : bytes;
    budget -= slice.length;
    out.write(slice);
    return budget > 0;
  };
  const read = () => (existsSync(file) ? readFileSync(file, 'utf8') : '');
  let content = read();
  let lines = parseLines(content);
  if (query.sinceTime) {
    const since = query.sinceTime.toISOString();
    lines = lines.filter((line) => line.time >= since);
  }
  if (query.tailLines !== undefined) lines = query.tailLines > 0 ? lines.slice(-query.tailLines) : [];
  // Only whole lines are followed, so a half-written line is not sent twice.
  let offset = content.endsWith('\n') || !query.follow ? content.length : content.lastIndexOf('\n') + 1;
  for (const line of lines) {
    if (query.follow && !line.text.endsWith('\n')) break;
    if (!send(render(line, query.timestamps))) return;
  }
  if (!query.follow) return;
  for (;;) {
    const done = isDone();
    content = read();
    if (content.length > offset) {
      const fresh = content.slice(offset);
      const complete = done ? fresh : fresh.slice(0, fresh.lastIndexOf('\n') + 1);
      offset += complete.length;
      for (const line of parseLines(complete)) {
        if (!send(render(line, query.timestamps))) return;
      }
    }
    if (done || signal.aborted) return;
    await sleep(200);
  }
}
