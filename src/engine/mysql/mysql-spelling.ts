/**
 * Respells the parts of a CREATE TABLE or CREATE INDEX statement that MySQL and MariaDB accept but the
 * grammar (node-sql-parser's MariaDB flavour) does not, into spellings it reads with the same meaning:
 * column names that are words of its own (`status`, `full`) are backquoted; `REAL` and `DOUBLE PRECISION`
 * are `DOUBLE` (as the server stores them without REAL_AS_FLOAT), and the other synonyms it lacks (`BOOL`,
 * `CHARACTER VARYING`, `DEC`, ...) the types they stand for; `ON UPDATE NOW()` is `ON UPDATE
 * CURRENT_TIMESTAMP`; MariaDB's `IGNORED` index option is MySQL's `INVISIBLE`; an `INVISIBLE` column
 * attribute, which the grammar lacks, is taken out and reported; `SERIAL` is written out. Strings and comments are never touched.
 */

export type TokenKind = 'space' | 'comment' | 'quoted' | 'string' | 'word' | 'punct';

export interface Token {
  readonly kind: TokenKind;
  text: string;
  /** The text as written, before any respelling. */
  readonly source: string;
}

export function tokenize(sql: string): Token[] {
  const out: Token[] = [];
  const re =
    /(\s+)|(--[^\n]*|#[^\n]*|\/\*[\s\S]*?\*\/)|(`(?:[^`]|``)*`)|('(?:[^'\\]|\\[\s\S]|'')*'|"(?:[^"\\]|\\[\s\S]|"")*")|([A-Za-z0-9_$\u0080-\uffff]+)|([\s\S])/gy;
  for (let m = re.exec(sql); m !== null && m[0] !== ''; m = re.exec(sql)) {
    const kind: TokenKind =
      m[1] !== undefined
        ? 'space'
        : m[2] !== undefined
          ? 'comment'
          : m[3] !== undefined
            ? 'quoted'
            : m[4] !== undefined
              ? 'string'
              : m[5] !== undefined
                ? 'word'
                : 'punct';
    out.push({ kind, text: m[0], source: m[0] });
  }
  return out;
}

const significant = (t: Token) => t.kind !== 'space' && t.kind !== 'comment';
const upper = (t: Token | undefined) => (t?.kind === 'word' ? t.text.toUpperCase() : undefined);
const quote = (t: Token) => {
  if (t.kind === 'word' && !/^\d+$/.test(t.text)) t.text = '`' + t.text + '`';
};

/** Words that begin a key, index or constraint definition inside CREATE TABLE's parentheses. */
const DEFINITION_WORDS = new Set([
  'CONSTRAINT',
  'PRIMARY',
  'UNIQUE',
  'KEY',
  'INDEX',
  'FULLTEXT',
  'SPATIAL',
  'FOREIGN',
  'CHECK',
  'PERIOD',
]);
/** Words a key definition spells around its name and column list. */
const KEY_WORDS = new Set([
  ...DEFINITION_WORDS,
  'USING',
  'BTREE',
  'HASH',
  'REFERENCES',
  'ON',
  'IF',
  'NOT',
  'EXISTS',
]);

export interface Respelled {
  readonly sql: string;
  /** Lower-cased names of the columns declared INVISIBLE. */
  readonly invisibleColumns: ReadonlySet<string>;
  /** The tokens `sql` is made of, each knowing what it was written as. */
  readonly tokens: readonly Token[];
}

function respelled(tokens: readonly Token[], invisibleColumns: ReadonlySet<string> = new Set()): Respelled {
  return { sql: tokens.map((t) => t.text).join(''), invisibleColumns, tokens };
}

/** Where an offset of the respelled text was in the text as written (a grammar error's position). */
export function writtenOffset(r: Respelled, offset: number): number {
  let out = 0;
  let written = 0;
  for (const t of r.tokens) {
    if (offset < out + t.text.length) return written + Math.min(offset - out, t.source.length);
    out += t.text.length;
    written += t.source.length;
  }
  return written + (offset - out);
}

/** The significant tokens of `list`, each with its index in `list`. */
function sig(list: readonly Token[]): { t: Token; i: number }[] {
  return list.flatMap((t, i) => (significant(t) ? [{ t, i }] : []));
}

/**
 * In a parenthesised list of key parts starting at s[at] = '(', backquotes bare names (a name followed by
 * `,`, `)`, ASC, DESC or a prefix length); inside an expression part, the table's own column names.
 */
function quoteKeyParts(s: readonly { t: Token }[], at: number, columns: ReadonlySet<string>): number {
  let depth = 0;
  for (let k = at; k < s.length; k++) {
    const cur = s[k]?.t as Token;
    if (cur.text === '(') depth++;
    else if (cur.text === ')') {
      depth--;
      if (depth === 0) return k;
    } else if (cur.kind === 'word') {
      const next = s[k + 1]?.t;
      const prev = s[k - 1]?.t;
      if (prev?.text === '.' || upper(cur) === 'ASC' || upper(cur) === 'DESC') continue;
      const bare =
        depth === 1 &&
        (next?.text === ',' ||
          next?.text === ')' ||
          upper(next) === 'ASC' ||
          upper(next) === 'DESC' ||
          (next?.text === '(' && /^\d+$/.test(s[k + 2]?.t.text ?? '') && s[k + 3]?.t.text === ')'));
      if (bare || (depth > 1 && next?.text !== '(' && columns.has(cur.text.toLowerCase()))) quote(cur);
    }
  }
  return s.length;
}

/** `IGNORED` → `INVISIBLE`, `NOT IGNORED` → `VISIBLE` among an index's options. */
function respellIndexOptions(s: readonly { t: Token }[], from: number): void {
  for (let k = from; k < s.length; k++) {
    const cur = s[k]?.t as Token;
    if (upper(cur) !== 'IGNORED') continue;
    const prev = s[k - 1]?.t;
    if (upper(prev) === 'NOT' && prev !== undefined) {
      prev.text = '';
      cur.text = 'VISIBLE';
    } else cur.text = 'INVISIBLE';
  }
}

/** One key, index, foreign key or check definition of a CREATE TABLE. */
function respellKeyDefinition(list: readonly Token[], columns: ReadonlySet<string>): void {
  const s = sig(list);
  let k = 0;
  if (upper(s[0]?.t) === 'CONSTRAINT') {
    const name = s[1]?.t;
    if (name !== undefined && !DEFINITION_WORDS.has(upper(name) ?? '')) {
      quote(name);
      k = 2;
    } else k = 1;
  }
  const isCheck = upper(s[k]?.t) === 'CHECK';
  for (; k < s.length; k++) {
    const cur = s[k]?.t as Token;
    if (cur.text === '(') {
      if (isCheck) {
        // An expression: its words are the table's columns where they name one, and never a call.
        let depth = 0;
        for (; k < s.length; k++) {
          const c = s[k]?.t as Token;
          if (c.text === '(') depth++;
          else if (c.text === ')' && --depth === 0) break;
          else if (
            c.kind === 'word' &&
            s[k + 1]?.t.text !== '(' &&
            s[k - 1]?.t.text !== '.' &&
            columns.has(c.text.toLowerCase())
          )
            quote(c);
        }
        continue;
      }
      k = quoteKeyParts(s, k, columns);
      continue;
    }
    if (upper(cur) === 'REFERENCES') {
      const ref = s[k + 1]?.t;
      if (ref !== undefined) quote(ref);
      k++;
      continue;
    }
    // The index's own name: the word before its column list.
    if (cur.kind === 'word' && s[k + 1]?.t.text === '(' && !KEY_WORDS.has(upper(cur) ?? '')) quote(cur);
  }
  // Options follow the last column list.
  respellIndexOptions(s, 0);
}

const SERIAL_ATTRIBUTES = 'NOT NULL AUTO_INCREMENT UNIQUE';

/** One column definition: name, type, attributes (expressions in them name the table's columns). */
function respellColumn(list: readonly Token[], columns: ReadonlySet<string>, invisible: Set<string>): void {
  const s = sig(list);
  const name = s[0]?.t;
  if (name === undefined) return;
  quote(name);
  const type = s[1]?.t;
  if (type !== undefined) respellTypeSynonym(type, s[2]?.t);
  if (upper(type) === 'REAL' && type !== undefined) type.text = 'DOUBLE';
  // SERIAL is MySQL's alias, and SERIAL DEFAULT VALUE an integer column's: the server stores what they stand for.
  if (upper(type) === 'SERIAL' && type !== undefined) type.text = `bigint unsigned ${SERIAL_ATTRIBUTES}`;
  if (upper(type) === 'DOUBLE' && upper(s[2]?.t) === 'PRECISION') {
    const p = s[2]?.t as Token;
    p.text = '';
  }
  let depth = 0;
  for (let k = 2; k < s.length; k++) {
    const cur = s[k]?.t as Token;
    if (cur.text === '(') depth++;
    else if (cur.text === ')') depth--;
    if (cur.kind !== 'word') continue;
    if (depth > 0) {
      if (s[k + 1]?.t.text !== '(' && s[k - 1]?.t.text !== '.' && columns.has(cur.text.toLowerCase()))
        quote(cur);
      continue;
    }
    const word = upper(cur);
    if (word === 'SERIAL' && upper(s[k + 1]?.t) === 'DEFAULT' && upper(s[k + 2]?.t) === 'VALUE') {
      cur.text = SERIAL_ATTRIBUTES;
      (s[k + 1]?.t as Token).text = '';
      (s[k + 2]?.t as Token).text = '';
      k += 2;
      continue;
    }
    if (word === 'INVISIBLE') {
      cur.text = '';
      invisible.add(name.text.replace(/^`|`$/g, '').replace(/``/g, '`').toLowerCase());
    }
    if (word === 'UPDATE' && upper(s[k - 1]?.t) === 'ON') {
      const fn = s[k + 1]?.t;
      if (fn !== undefined && ['NOW', 'LOCALTIME', 'LOCALTIMESTAMP'].includes(upper(fn) ?? ''))
        fn.text = 'CURRENT_TIMESTAMP';
    }
    if (word === 'REFERENCES') {
      const ref = s[k + 1]?.t;
      if (ref !== undefined) quote(ref);
      if (s[k + 2]?.t.text === '(') k = quoteKeyParts(s, k + 2, new Set());
    }
  }
}

/**
 * MySQL's synonyms the grammar lacks, as the types the server stores for them: BOOL, CHARACTER [VARYING],
 * CHAR VARYING, VARCHARACTER, DEC and FIXED, MIDDLEINT, LONG [VARCHAR] and LONG VARBINARY.
 */
const TYPE_SYNONYMS: Readonly<Record<string, string>> = {
  BOOL: 'BOOLEAN',
  CHARACTER: 'CHAR',
  VARCHARACTER: 'VARCHAR',
  DEC: 'DECIMAL',
  FIXED: 'DECIMAL',
  MIDDLEINT: 'MEDIUMINT',
  LONG: 'MEDIUMTEXT',
};
const TWO_WORD_SYNONYMS: Readonly<Record<string, string>> = {
  'CHARACTER VARYING': 'VARCHAR',
  'CHAR VARYING': 'VARCHAR',
  'LONG VARCHAR': 'MEDIUMTEXT',
  'LONG VARBINARY': 'MEDIUMBLOB',
};

function respellTypeSynonym(type: Token, next: Token | undefined): void {
  const two = TWO_WORD_SYNONYMS[`${upper(type) ?? ''} ${upper(next) ?? ''}`];
  if (two !== undefined && next !== undefined) {
    type.text = two;
    next.text = '';
    return;
  }
  const one = TYPE_SYNONYMS[upper(type) ?? ''];
  if (one !== undefined) type.text = one;
}

function unquoted(t: Token): string {
  return t.kind === 'quoted' ? t.text.slice(1, -1).replace(/``/g, '`') : t.text;
}

/** CREATE TABLE name ( definitions ) options, respelled; any other statement comes back as it was. */
export function respellCreateTable(sql: string): Respelled {
  const tokens = tokenize(sql);
  const invisible = new Set<string>();
  const open = tokens.findIndex((t) => t.text === '(');
  if (open < 0) return respelled(tokens);
  const definitions: Token[][] = [];
  let depth = 0;
  let current: Token[] = [];
  for (let i = open + 1; i < tokens.length; i++) {
    const t = tokens[i] as Token;
    if (t.text === '(') depth++;
    else if (t.text === ')') {
      if (depth === 0) break;
      depth--;
    }
    if (depth === 0 && t.text === ',') {
      definitions.push(current);
      current = [];
    } else current.push(t);
  }
  definitions.push(current);
  const isKey = (d: readonly Token[]) => DEFINITION_WORDS.has(upper(d.find(significant)) ?? '');
  const columns = new Set(
    definitions.flatMap((d) => {
      const first = d.find(significant);
      return first !== undefined && !isKey(d) ? [unquoted(first).toLowerCase()] : [];
    }),
  );
  for (const d of definitions) {
    if (isKey(d)) respellKeyDefinition(d, columns);
    else respellColumn(d, columns, invisible);
  }
  // The table's own name may be such a word too.
  const name = sig(tokens.slice(0, open)).at(-1)?.t;
  if (name !== undefined && !['TABLE', 'EXISTS'].includes(upper(name) ?? '')) quote(name);
  return respelled(tokens, invisible);
}

/** CREATE [UNIQUE|FULLTEXT|SPATIAL] INDEX name ON table (parts) options, respelled. */
export function respellCreateIndex(sql: string, columns: ReadonlySet<string>): Respelled {
  const tokens = tokenize(sql);
  const s = sig(tokens);
  const on = s.findIndex((x) => upper(x.t) === 'ON');
  if (on < 0) return respelled(tokens);
  const name = s[on - 1]?.t;
  if (name !== undefined && upper(name) !== 'INDEX') quote(name);
  const table = s[on + 1]?.t;
  if (table !== undefined) quote(table);
  const open = s.findIndex((x, k) => k > on && x.t.text === '(');
  if (open >= 0) quoteKeyParts(s, open, columns);
  respellIndexOptions(s, Math.max(open, 0));
  return respelled(tokens);
}

/**
 * A view's SELECT with the parentheses the server puts around a leading join group taken away: MariaDB
 * stores `from ((a join b on(…)) left join c on(…))`, which the grammar cannot read, and a join group that
 * starts a FROM clause means the same without them (joins associate to the left). A group after a JOIN,
 * or holding a comma, keeps its parentheses. A string's character set introducer goes, as the server
 * drops it.
 */
export function respellViewSelect(select: string): string {
  const tokens = tokenize(select);
  const s = sig(tokens);
  const matching = (k: number): number => {
    let depth = 0;
    for (let j = k; j < s.length; j++) {
      if (s[j]?.t.text === '(') depth++;
      else if (s[j]?.t.text === ')' && --depth === 0) return j;
    }
    return -1;
  };
  const hasTopLevelComma = (open: number, close: number): boolean => {
    let depth = 0;
    for (let j = open + 1; j < close; j++) {
      const t = s[j]?.t.text;
      if (t === '(') depth++;
      else if (t === ')') depth--;
      else if (t === ',' && depth === 0) return true;
    }
    return false;
  };
  // `_utf8' '`: the server keeps the string and drops its character set introducer.
  for (let k = 0; k + 1 < s.length; k++) {
    const t = s[k]?.t as Token;
    if (
      t.kind === 'word' &&
      /^_[a-z0-9]+$/i.test(t.text) &&
      s[k + 1]?.t.kind === 'string' &&
      s[k + 1]?.i === (s[k]?.i ?? 0) + 1
    )
      t.text = '';
  }
  for (let k = 0; k < s.length; k++) {
    if (upper(s[k]?.t) !== 'FROM') continue;
    let at = k + 1;
    while (s[at]?.t.text === '(' && !['SELECT', 'WITH'].includes(upper(s[at + 1]?.t) ?? '')) {
      const close = matching(at);
      if (close < 0 || hasTopLevelComma(at, close)) break;
      (s[at]?.t as Token).text = ' ';
      (s[close]?.t as Token).text = ' ';
      at++;
    }
  }
  return tokens.map((t) => t.text).join('');
}

/** INSERT|REPLACE INTO name (columns) VALUES …: the table and column names backquoted. */
export function respellInsert(sql: string): Respelled {
  const tokens = tokenize(sql);
  const s = sig(tokens);
  const into = s.findIndex((x) => upper(x.t) === 'INTO');
  if (into < 0) return respelled(tokens);
  const table = s[into + 1]?.t;
  if (table === undefined) return respelled(tokens);
  let at = into + 2;
  if (s[at]?.t.text === '.') {
    const t = s[at + 1]?.t;
    if (t !== undefined) quote(t);
    at += 2;
  } else quote(table);
  if (s[at]?.t.text === '(') quoteKeyParts(s, at, new Set());
  return respelled(tokens);
}
