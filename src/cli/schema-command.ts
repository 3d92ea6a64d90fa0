// Placeholder until the schema engine lands (issue: schema engine for PostgreSQL).
import { EXIT } from './exit-codes.ts';

export async function runSchemaCommand(_argv: readonly string[]): Promise<number> {
  process.stderr.write('ptah schema: not implemented yet\n');
  return EXIT.failed;
}
