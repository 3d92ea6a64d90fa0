/**
 * The long-running owner of a detached environment (`npm run env -- up`). It starts every
 * component as its own child, so all of them share its process group, and stops them all on
 * SIGTERM or SIGINT. Usage: supervisor.ts <dir> <component,component,...>
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FAILED_FILE, READY_FILE } from './supervisor-files.ts';
import { COMPONENTS, startEnvironment, type Component, type Environment } from './environment.ts';

async function main(): Promise<void> {
  const [dir, list = ''] = process.argv.slice(2);
  if (!dir) throw new Error('usage: supervisor.ts <dir> <components>');
  const components = list
    .split(',')
    .filter((c) => c !== '')
    .map((c) => {
      if (!(COMPONENTS as readonly string[]).includes(c))
        throw new Error(`supervisor: unknown component ${c}`);
      return c as Component;
    });

  let environment: Environment | undefined;
  let stopRequested = false;
  const stop = async (): Promise<void> => {
    try {
      await environment?.stop();
    } finally {
      process.exit(0);
    }
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (stopRequested) return;
      stopRequested = true;
      console.log(`supervisor: ${signal}, stopping`);
      // While starting, there is nothing whole to stop yet; the start path checks the flag.
      if (environment) void stop();
    });
  }
  // The terminal that ran `up` may close; the environment outlives it.
  process.on('SIGHUP', () => undefined);

  try {
    environment = await startEnvironment({ dir, components });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    writeFileSync(join(dir, FAILED_FILE), message + '\n');
    console.error(`supervisor: start failed: ${message}`);
    process.exit(1);
  }
  if (stopRequested) {
    await stop();
    return;
  }
  writeFileSync(join(dir, READY_FILE), `${process.pid}\n`);
  console.log(`supervisor: ready (pid ${process.pid})`);
  // Stay alive until a signal arrives.
  setInterval(() => undefined, 1 << 30);
}

await main();
