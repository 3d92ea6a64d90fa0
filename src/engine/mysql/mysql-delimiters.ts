/**
 * `DELIMITER x` is the mysql client's command, not SQL, but dumps and hand-written files use it around
 * triggers and routines (`DELIMITER ;;` … `END ;;` … `DELIMITER ;`). The statement splitter already knows
 * where a compound body ends, so each delimiter is respelled `;` and each DELIMITER line blanked, keeping
 * every other character where it was written (lines and columns in messages stay true).
 */
import { tokenize } from './mysql-spelling.ts';

const DELIMITER_LINE = /^[ \t]*delimiter[ \t]+(\S+)[ \t]*$/i;

export function withDelimiters(sql: string): string {
  if (!/^[ \t]*delimiter[ \t]/im.test(sql)) return sql;
  const lines = sql.split('\n');
  let delimiter = ';';
  let region: string[] = [];
  const out: string[] = [];
  const flush = () => {
    if (region.length === 0) return;
    const text = region.join('\n');
    out.push(delimiter === ';' ? text : respell(text, delimiter));
    region = [];
  };
  for (const line of lines) {
    const m = DELIMITER_LINE.exec(line);
    if (m) {
      flush();
      delimiter = m[1] ?? ';';
      out.push(' '.repeat(line.length));
    } else region.push(line);
  }
  flush();
  return out.join('\n');
}

/** Each `delimiter` outside strings, quoted names and comments becomes `;` padded to its length. */
function respell(text: string, delimiter: string): string {
  // Code with strings and comments masked, so a delimiter inside them is never found.
  let masked = '';
  for (const t of tokenize(text))
    masked +=
      t.kind === 'string' || t.kind === 'quoted' || t.kind === 'comment'
        ? '\0'.repeat(t.source.length)
        : t.source;
  let out = '';
  let from = 0;
  for (let at = masked.indexOf(delimiter); at !== -1; at = masked.indexOf(delimiter, at + delimiter.length)) {
    out += text.slice(from, at) + ';' + ' '.repeat(delimiter.length - 1);
    from = at + delimiter.length;
  }
  return out + text.slice(from);
}
