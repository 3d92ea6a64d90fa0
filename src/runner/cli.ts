// Process entry of `ptah-runner` (bin/ptah-runner.mjs). SIGTERM aborts the running child with the grace
// split described in child.ts; the exit code is set, not forced, so stdout drains before the process ends.
import { runRunner } from './main.ts';

const controller = new AbortController();
process.once('SIGTERM', () => controller.abort());
process.once('SIGINT', () => controller.abort());

process.exitCode = await runRunner(process.argv.slice(2), process.env, {
  writeStdout: (text) => process.stdout.write(text),
  writeStderr: (text) => process.stderr.write(text),
  signal: controller.signal,
});
