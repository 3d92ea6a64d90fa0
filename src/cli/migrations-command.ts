// Placeholder until the migrations engine lands (issue: versioned migrations engine).
import { EXIT } from './exit-codes.ts';

export async function runMigrationsCommand(_argv: readonly string[]): Promise<number> {
  process.stderr.write('ptah migrations: not implemented yet\n');
  return EXIT.failed;
}
