// `ptah`: the schema engine's command line. Thin: parse, call the engine, map the result to output and an
// exit code. Each command family lives in its own module and registers here.
// The command modules load the database drivers and the parser, so they are imported only when chosen:
// `--version` and `--help` start without them.
import { VERSION } from '../build-info.ts';
import { EXIT } from './exit-codes.ts';

const USAGE = `usage: ptah <command> [options]

commands:
  schema      inspect, plan, apply and drift a declared schema
  migrations  versioned migrations: new, hash, validate, status, up, baseline, repair, set
  oci         registry artifacts: resolve, inspect, verify (schema|migrations push|pull publish them)
  git         a Git source: resolve a ref to a commit and content digest, pull a recorded commit

The database URL comes from --url or the PTAH_DB_URL environment variable.
'ptah --version' prints the version.
Run 'ptah <command> --help' for a command's options.`;

export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'schema':
      if (rest[0] === 'push' || rest[0] === 'pull') {
        return await (await import('./oci-command.ts')).runArtifactCommand('schema', rest);
      }
      return await (await import('./schema-command.ts')).runSchemaCommand(rest);
    case 'migrations':
      if (rest[0] === 'push' || rest[0] === 'pull') {
        return await (await import('./oci-command.ts')).runArtifactCommand('migrations', rest);
      }
      return await (await import('./migrations-command.ts')).runMigrationsCommand(rest);
    case 'oci':
      return await (await import('./oci-command.ts')).runOciCommand(rest);
    case 'git':
      return await (await import('./git-command.ts')).runGitCommand(rest);
    case '--version':
    case 'version':
      process.stdout.write(`ptah ${VERSION}\n`);
      return EXIT.ok;
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      process.stdout.write(USAGE + '\n');
      return command === undefined ? EXIT.usage : EXIT.ok;
    default:
      process.stderr.write(`ptah: unknown command "${command}"\n\n${USAGE}\n`);
      return EXIT.usage;
  }
}

process.exitCode = await main(process.argv.slice(2));
