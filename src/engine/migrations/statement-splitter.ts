/**
 * Splits a migration file into statements at top-level semicolons. It understands what can hide a
 * semicolon: quoted strings and identifiers, comments, parentheses, PostgreSQL dollar-quoted bodies and
 * PostgreSQL SQL-standard function bodies (`CREATE FUNCTION … BEGIN ATOMIC …; …; END`). A statement's
 * position is its 1-based index in the file; pieces that are only comments or blank are not statements.
 * `DELIMITER` is not supported (it is a mysql-client command, not SQL).
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

/**
 * Tracks whether a PostgreSQL statement is a routine definition (`CREATE [OR REPLACE] FUNCTION|PROCEDURE`)
 * and, inside one, the nesting of BEGIN … END and CASE … END, so that semicolons in a SQL-standard body
 * do not end the statement. Only the statement's leading words decide whether it is a routine.
 */
class RoutineBodyTracker {
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

export function splitStatements(sql: string, dialect: SplitDialect): SplitStatement[] {
  const out: SplitStatement[] = [];
  const n = sql.length;
  const routine = new RoutineBodyTracker();
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
    if ((c === '-' && next === '-') || (dialect === 'mysql' && c === '#')) {
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
      } else i++;
      continue;
    }
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    markCode();
    if (c === "'") {
      // PostgreSQL: E'...' strings honour backslashes; standard strings do not. MySQL: backslashes escape.
      const prev = sql[i - 1] ?? '';
      const escaped =
        dialect === 'mysql' || ((prev === 'E' || prev === 'e') && !WORD_CHAR.test(sql[i - 2] ?? ''));
      skipQuoted("'", escaped);
      continue;
    }
    if (c === '"') {
      skipQuoted('"', dialect === 'mysql');
      continue;
    }
    if (c === '`' && dialect === 'mysql') {
      skipQuoted('`', false);
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
      if (dialect === 'postgres') routine.word(w, parens);
      i += w.length;
      continue;
    }
    i++;
  }
  push(n);
  return out;
}

function lineOf(text: string, offset: number): number {
  return text.slice(0, offset).split('\n').length;
}
