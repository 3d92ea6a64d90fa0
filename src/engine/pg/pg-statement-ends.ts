/**
 * Where a long SQL text can be cut between statements without parsing it: the first `;` ending a line that
 * is not inside a literal, a quoted name, a comment or a dollar-quoted body. A function body is full of
 * `;` at line ends, and a cut there left a piece that did not parse, so the whole text was parsed at once.
 *
 * Lexical only, as PostgreSQL's scanner sees the text with standard_conforming_strings on (as the parser
 * here does): a `;` inside a BEGIN ATOMIC body is still taken for an end, which the caller's parse of the
 * piece catches.
 */

const SEMICOLON = 0x3b;
const NEWLINE = 0x0a;
const QUOTE = 0x27;
const DOUBLE_QUOTE = 0x22;
const DOLLAR = 0x24;
const DASH = 0x2d;
const SLASH = 0x2f;
const BACKSLASH = 0x5c;

/** A letter, digit, `_`, `$` or any non-ASCII character: what continues an identifier. */
function continuesIdentifier(unit: number): boolean {
  return (
    (unit >= 0x61 && unit <= 0x7a) ||
    (unit >= 0x41 && unit <= 0x5a) ||
    (unit >= 0x30 && unit <= 0x39) ||
    unit === 0x5f ||
    unit === DOLLAR ||
    unit >= 0x80
  );
}

/** `$tag$` at `at` (a tag starts with a letter or `_`, so `$1` is a parameter), or undefined. */
const DOLLAR_TAG = /\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/y;
function dollarTagAt(sql: string, at: number): string | undefined {
  DOLLAR_TAG.lastIndex = at;
  return DOLLAR_TAG.exec(sql)?.[0];
}

/** Past the quote that closes the one opening at `open`, a doubled quote being part of the text. */
function pastQuoted(sql: string, open: number, quote: string, backslashEscapes: boolean): number {
  let at = open + 1;
  for (;;) {
    const close = sql.indexOf(quote, at);
    if (close < 0) return sql.length;
    if (backslashEscapes) {
      let slashes = 0;
      while (sql.charCodeAt(close - 1 - slashes) === BACKSLASH) slashes++;
      if (slashes % 2 === 1) {
        at = close + 1;
        continue;
      }
    }
    if (sql.startsWith(quote, close + 1)) {
      at = close + 2;
      continue;
    }
    return close + 1;
  }
}

/** Past the end of a block comment opening at `open`; block comments nest. */
function pastBlockComment(sql: string, open: number): number {
  let depth = 1;
  let at = open + 2;
  while (depth > 0) {
    const next = sql.indexOf('/*', at);
    const close = sql.indexOf('*/', at);
    if (close < 0) return sql.length;
    if (next >= 0 && next < close) {
      depth++;
      at = next + 2;
    } else {
      depth--;
      at = close + 2;
    }
  }
  return at;
}

/**
 * Where the scan has something to read: a `;`, a comment's start, a quote or a `$`. Everything between is
 * skipped by one native search rather than read unit by unit (a no-op plan reads its whole text twice).
 */
const NEXT_STOP = /[;'"$]|--|\/\*/g;

/**
 * The index of the first `;` followed by a newline, at or after `atLeast`, outside any literal, quoted
 * name, comment or dollar-quoted body; -1 when there is none. `from` must be a statement boundary (the
 * text's start, or just after a statement's `;`): the scan reads from there.
 */
export function statementEndAfter(sql: string, from: number, atLeast: number): number {
  let at = from;
  while (at < sql.length) {
    NEXT_STOP.lastIndex = at;
    const stop = NEXT_STOP.exec(sql);
    if (stop === null) return -1;
    at = stop.index;
    const unit = sql.charCodeAt(at);
    if (unit === SEMICOLON) {
      if (at >= atLeast && sql.charCodeAt(at + 1) === NEWLINE) return at;
      at++;
    } else if (unit === DASH) {
      const end = sql.indexOf('\n', at);
      at = end < 0 ? sql.length : end;
    } else if (unit === SLASH) {
      at = pastBlockComment(sql, at);
    } else if (unit === QUOTE) {
      // E'...' reads backslash escapes; an E that ends a longer word (`type'...'` is no such thing) does not.
      const e = sql.charCodeAt(at - 1);
      const escapes = (e === 0x45 || e === 0x65) && !continuesIdentifier(sql.charCodeAt(at - 2));
      at = pastQuoted(sql, at, "'", escapes);
    } else if (unit === DOUBLE_QUOTE) {
      at = pastQuoted(sql, at, '"', false);
    } else if (continuesIdentifier(sql.charCodeAt(at - 1))) {
      // A `$` inside a word (`a$b$`) is part of the word, never a dollar quote.
      at++;
    } else {
      const tag = dollarTagAt(sql, at);
      if (tag === undefined) {
        at++;
      } else {
        const close = sql.indexOf(tag, at + tag.length);
        at = close < 0 ? sql.length : close + tag.length;
      }
    }
  }
  return -1;
}
