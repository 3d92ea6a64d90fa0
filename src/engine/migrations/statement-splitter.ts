/**
 * Splits a migration file into statements at top-level semicolons. It understands what can hide a
 * semicolon: quoted strings and identifiers, comments, parentheses, PostgreSQL dollar-quoted bodies and
 * routine bodies: PostgreSQL SQL-standard bodies (`CREATE FUNCTION … BEGIN ATOMIC …; …; END`) and MySQL
 * compound statements in procedures, functions, triggers and events (`BEGIN … IF …; END IF; … END`), so a
 * MySQL file needs no `DELIMITER` (which is a mysql-client command, not SQL, and is not supported). A statement's
 * position is its 1-based index in the file; pieces that are only comments or blank are not statements.
 */

export type SplitDialect = 'postgres' | 'mysql';

export interface SplitStatement {
  /** 1-based position among the file's statements. */
  readonly index: number;
  /** The statement text without the terminating semicolon, trimmed. */
  readonly sql: string;
  /** 1-based line of the statement's first code character (after leading comments), for people. */
  readonly line: number;
}

export class StatementSplitError extends Error {
  override readonly name = 'StatementSplitError';
}

const DOLLAR_TAG = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/;
const WORD = /[A-Za-z_][A-Za-z0-9_$]*/y;
const WORD_CHAR = /[A-Za-z0-9_$]/;

interface BodyTracker {
  /** Nesting depth of BEGIN … END style blocks; semicolons split only at depth 0. */
  readonly depth: number;
  /** A word outside quotes and comments; `prev` is the previous token (lower-cased word or punctuation). */
  word(w: string, parenDepth: number, prev: string): void;
  reset(): void;
}

/**
 * PostgreSQL: in a routine definition (`CREATE [OR REPLACE] FUNCTION|PROCEDURE`) tracks BEGIN … END and
 * CASE … END nesting, so that semicolons in a SQL-standard body do not end the statement. Only the
 * statement's leading words decide whether it is a routine.
 */
class PgRoutineBody implements BodyTracker {
  private words: string[] = [];
  depth = 0;

  reset(): void {
    this.words = [];
    this.depth = 0;
  }

  word(w: string, parenDepth: number): void {
    const lower = w.toLowerCase();
    if (this.words.length < 4) this.words.push(lower);
    if (!this.isRoutine() || parenDepth > 0) return;
    if (lower === 'begin') this.depth++;
    else if (lower === 'case' && this.depth > 0) this.depth++;
    else if (lower === 'end' && this.depth > 0) this.depth--;
  }

  private isRoutine(): boolean {
    const [a, b, c, d] = this.words;
    if (a !== 'create') return false;
    const routine = (x: string | undefined) => x === 'function' || x === 'procedure';
    return routine(b) || (b === 'or' && c === 'replace' && routine(d));
  }
}

/** Tokens after which a MySQL compound-statement keyword starts a statement rather than an expression. */
const MYSQL_STATEMENT_START = new Set([';', ':', 'begin', 'then', 'else', 'do', 'loop', 'repeat', 'row']);
const MYSQL_ROUTINE_KINDS = new Set(['procedure', 'function', 'trigger', 'event']);

/**
 * MySQL/MariaDB: in `CREATE … PROCEDURE|FUNCTION|TRIGGER|EVENT` tracks compound statements: BEGIN … END,
 * CASE … END [CASE], and IF/LOOP/REPEAT/WHILE … END <kind> when the keyword starts a statement (so the
 * IF() and REPEAT() functions do not count, nor the IF/LOOP after END).
 */
class MysqlCompoundBody implements BodyTracker {
  private count = 0;
  private routine: boolean | undefined;
  depth = 0;

  reset(): void {
    this.count = 0;
    this.routine = undefined;
    this.depth = 0;
  }

  word(w: string, parenDepth: number, prev: string): void {
    const lower = w.toLowerCase();
    this.count++;
    if (this.count === 1) {
      this.routine = lower === 'create' ? undefined : false;
      return;
    }
    // The kind appears after CREATE, optional OR REPLACE, DEFINER = …, AGGREGATE, within a few words.
    if (this.routine === undefined) {
      if (MYSQL_ROUTINE_KINDS.has(lower)) this.routine = true;
      else if (this.count > 10) this.routine = false;
      return;
    }
    if (!this.routine || parenDepth > 0) return;
    if (lower === 'begin') this.depth++;
    else if (lower === 'case' && this.depth > 0 && prev !== 'end') this.depth++;
    else if (lower === 'end' && this.depth > 0) this.depth--;
    else if (
      (lower === 'if' || lower === 'loop' || lower === 'repeat' || lower === 'while') &&
      MYSQL_STATEMENT_START.has(prev)
    ) {
      this.depth++;
    }
  }
}

export function splitStatements(sql: string, dialect: SplitDialect): SplitStatement[] {
  const out: SplitStatement[] = [];
  const n = sql.length;
  const routine: BodyTracker = dialect === 'postgres' ? new PgRoutineBody() : new MysqlCompoundBody();
  /** The previous token, for the MySQL tracker: a lower-cased word, a punctuation character, or `'`. */
  let prev = '';
  let start = 0;
  let i = 0;
  let parens = 0;
  let hasCode = false;
  let codeStart = 0;

  const markCode = () => {
    if (!hasCode) codeStart = i;
    hasCode = true;
  };
  const push = (end: number) => {
    const text = sql.slice(start, end).trim();
    if (hasCode && text !== '') out.push({ index: out.length + 1, sql: text, line: lineOf(sql, codeStart) });
    hasCode = false;
    parens = 0;
    prev = '';
    routine.reset();
  };
  const skipQuoted = (quote: string, backslash: boolean): void => {
    const open = i;
    i++;
    while (i < n) {
      const c = sql[i];
      if (backslash && c === '\\') {
        i += 2;
        continue;
      }
      if (c === quote) {
        if (sql[i + 1] === quote) {
          i += 2;
          continue;
        }
        i++;
        return;
      }
      i++;
    }
    throw new StatementSplitError(`unterminated ${quote} quote starting on line ${lineOf(sql, open)}`);
  };

  while (i < n) {
    const c = sql[i] ?? '';
    const next = sql[i + 1] ?? '';
    // MySQL starts a `--` comment only when whitespace (or the end) follows: `1--1` is arithmetic there.
    const dashComment =
      c === '-' && next === '-' && (dialect === 'postgres' || i + 2 >= n || /\s/.test(sql[i + 2] ?? ''));
    if (dashComment || (dialect === 'mysql' && c === '#')) {
      const eol = sql.indexOf('\n', i);
      i = eol === -1 ? n : eol + 1;
      continue;
    }
    if (c === '/' && next === '*') {
      // PostgreSQL block comments nest; MySQL's do not. `/*! ... */` is code in MySQL, kept as code.
      if (dialect === 'mysql' && sql[i + 2] === '!') markCode();
      const open = i;
      let depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        if (sql[i] === '*' && sql[i + 1] === '/') {
          depth--;
          i += 2;
        } else if (dialect === 'postgres' && sql[i] === '/' && sql[i + 1] === '*') {
          depth++;
          i += 2;
        } else i++;
      }
      if (depth > 0) {
        throw new StatementSplitError(`unterminated /* comment starting on line ${lineOf(sql, open)}`);
      }
      continue;
    }
    if (c === ';') {
      if (parens === 0 && routine.depth === 0) {
        push(i);
        i++;
        start = i;
      } else {
        prev = ';';
        i++;
      }
      continue;
    }
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    markCode();
    if (c === "'") {
      // PostgreSQL: E'...' strings honour backslashes; standard strings do not. MySQL: backslashes escape.
      const before = sql[i - 1] ?? '';
      const escaped =
        dialect === 'mysql' || ((before === 'E' || before === 'e') && !WORD_CHAR.test(sql[i - 2] ?? ''));
      skipQuoted("'", escaped);
      prev = "'";
      continue;
    }
    if (c === '"') {
      skipQuoted('"', dialect === 'mysql');
      prev = "'";
      continue;
    }
    if (c === '`' && dialect === 'mysql') {
      skipQuoted('`', false);
      prev = "'";
      continue;
    }
    if (c === '$' && dialect === 'postgres' && !WORD_CHAR.test(sql[i - 1] ?? '')) {
      const m = DOLLAR_TAG.exec(sql.slice(i, i + 80));
      if (m) {
        const tag = m[0];
        const close = sql.indexOf(tag, i + tag.length);
        if (close === -1) {
          throw new StatementSplitError(`unterminated ${tag} body starting on line ${lineOf(sql, i)}`);
        }
        i = close + tag.length;
        continue;
      }
    }
    if (c === '(') parens++;
    else if (c === ')' && parens > 0) parens--;
    else if (/[A-Za-z_]/.test(c) && !WORD_CHAR.test(sql[i - 1] ?? '')) {
      WORD.lastIndex = i;
      const w = WORD.exec(sql)?.[0] ?? c;
      // An E'' string prefix is read as a word here; the quote after it is left to the string rule.
      routine.word(w, parens, prev);
      prev = w.toLowerCase();
      i += w.length;
      continue;
    }
    prev = c;
    i++;
  }
  push(n);
  return out;
}

function lineOf(text: string, offset: number): number {
  return text.slice(0, offset).split('\n').length;
}
