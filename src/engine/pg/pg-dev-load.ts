/**
 * Loads the desired files into a dev database (`--dev-url`) inside its open transaction, declarations in
 * any order, as the offline loader reads them: statements run one by one in the loader's order
 * (declarations, then what names them, then comments), each in a savepoint. A statement that names
 * something not created yet (a view over a table further down, a foreign key to a table declared later, an
 * index on a type an extension further down brings) is rolled back to its savepoint and run again in the
 * next pass, until a pass runs nothing: then every statement still waiting is reported with its position
 * and what PostgreSQL says it lacks. Any other error stops the load at once, naming the statement.
 */
import { DesiredStateError } from '../desired-state-error.ts';
import { DatabaseError, type Session } from '../session.ts';
import { type DevStatement, devStatements } from './pg-desired.ts';

/**
 * What a statement lacks that a later one may create: undefined_table, undefined_object (a type, an
 * operator class, a role), undefined_function, undefined_column (a column a later ALTER TABLE adds),
 * invalid_schema_name, and invalid_foreign_key (a key on columns whose unique constraint comes later).
 */
const NOT_DECLARED_YET = new Set(['42P01', '42704', '42883', '42703', '3F000', '42830']);

interface Waiting {
  readonly statement: DevStatement;
  readonly error: DatabaseError;
}

export async function loadIntoDevDatabase(
  dev: Session,
  files: readonly { path: string; sql: string }[],
): Promise<void> {
  // As pg_dump restores and as a plan applies: SQL function bodies are checked when they run, not created.
  await dev.query('SET LOCAL check_function_bodies = off');
  let pending: readonly DevStatement[] = await devStatements(files);
  while (pending.length > 0) {
    const waiting: Waiting[] = [];
    for (const statement of pending) {
      const error = await runInSavepoint(dev, statement);
      if (error === undefined) continue;
      if (!NOT_DECLARED_YET.has(error.sqlstate ?? ''))
        throw new DesiredStateError(
          `${statement.where}: the dev database rejected ${statement.label} (SQLSTATE ${error.sqlstate ?? 'unknown'}): ${error.message}; fix the statement and plan again`,
        );
      waiting.push({ statement, error });
    }
    if (waiting.length === pending.length) throw nothingProgressed(waiting);
    pending = waiting.map((w) => w.statement);
  }
}

/**
 * Runs one statement between a savepoint and its release in one round trip; on an error the transaction
 * goes back to the savepoint, as if the statement had not run.
 */
async function runInSavepoint(dev: Session, s: DevStatement): Promise<DatabaseError | undefined> {
  try {
    // Newlines keep a trailing `--` comment of the statement from swallowing the release.
    await dev.query(`SAVEPOINT ptah_dev_load;\n${s.sql}\n;RELEASE SAVEPOINT ptah_dev_load`);
    return undefined;
  } catch (error) {
    if (!(error instanceof DatabaseError) || error.sqlstate === undefined) throw error;
    await dev.query('ROLLBACK TO SAVEPOINT ptah_dev_load');
    return error;
  }
}

function nothingProgressed(waiting: readonly Waiting[]): DesiredStateError {
  const fix = 'declare it in the files (in any order), or create it in the dev database first';
  const [only] = waiting;
  if (waiting.length === 1 && only !== undefined)
    return new DesiredStateError(
      `${only.statement.where}: ${only.statement.label} names what no statement of the desired files creates: ${cause(only)}; ${fix}`,
    );
  return new DesiredStateError(
    `${waiting.length} statements of the desired state name what no other statement creates in the dev database; ${fix}; statements that wait on each other (two CREATE TABLEs whose foreign keys name each other) need one of them written as ALTER TABLE ... ADD CONSTRAINT:\n${waiting.map((w) => `  ${w.statement.where}: ${w.statement.label}: ${cause(w)}`).join('\n')}`,
  );
}

function cause(w: Waiting): string {
  return `${w.error.message} (SQLSTATE ${w.error.sqlstate ?? 'unknown'})`;
}
