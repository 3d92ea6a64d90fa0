// The generated PostgreSQL schema the engine benchmark plans against: the shape issue 9 measured (10–13
// columns, a named primary key, 2 indexes and up to 2 foreign keys per table, a few enums and views), so the
// figures compare with the ones in the issue. Deterministic: the same size gives the same text.

const ENUMS = 4;
const VIEWS_PER_THOUSAND = 10;

export interface GenerateOptions {
  /** The small change: one more column and one more index on the first table. */
  readonly change?: boolean;
}

export function generatedSchema(tables: number, options: GenerateOptions = {}): string {
  const out: string[] = [];
  for (let e = 0; e < ENUMS; e++)
    out.push(`CREATE TYPE status_${e} AS ENUM ('new', 'active', 'suspended', 'closed_${e}');`);
  for (let i = 0; i < tables; i++) {
    const cols = [
      'id bigint NOT NULL',
      'code varchar(32) NOT NULL',
      "name text NOT NULL DEFAULT ''",
      'amount numeric(12,2) CHECK (amount >= 0)',
      'created_at timestamptz NOT NULL DEFAULT now()',
      'updated_at timestamptz',
      `status status_${i % ENUMS} NOT NULL DEFAULT 'new'`,
      'flags integer[]',
      'note text',
      'parent_id bigint',
    ];
    // 10 to 13 columns.
    for (let x = 0; x < i % 4; x++) cols.push(`extra_${x} ${x % 2 === 0 ? 'integer' : 'boolean'}`);
    if (i >= 10) cols.push('other_id bigint');
    if (options.change === true && i === 0) cols.push('added text');
    cols.push(`CONSTRAINT t${i}_pkey PRIMARY KEY (id)`);
    if (i > 0)
      cols.push(
        `CONSTRAINT t${i}_parent_fk FOREIGN KEY (parent_id) REFERENCES t${i - 1} (id) ON DELETE CASCADE`,
      );
    if (i >= 10) cols.push(`CONSTRAINT t${i}_other_fk FOREIGN KEY (other_id) REFERENCES t${i - 10} (id)`);
    out.push(`CREATE TABLE t${i} (\n  ${cols.join(',\n  ')}\n);`);
    out.push(`CREATE UNIQUE INDEX t${i}_code_key ON t${i} (code);`);
    out.push(`CREATE INDEX t${i}_created_idx ON t${i} (created_at DESC) WHERE amount > 0;`);
    if (options.change === true && i === 0) out.push('CREATE INDEX t0_added_idx ON t0 (added);');
  }
  const views = Math.max(1, Math.floor((tables * VIEWS_PER_THOUSAND) / 1000));
  for (let v = 0; v < views; v++) {
    const t = Math.floor((v * tables) / views);
    out.push(
      `CREATE VIEW v${v} AS SELECT id, code, name, amount FROM t${t} WHERE status = 'active' AND amount > 0;`,
    );
  }
  return out.join('\n') + '\n';
}
