// The generated PostgreSQL schema the engine benchmark plans against: the shape issue 9 measured (10–13
// columns, a named primary key, 2 indexes and up to 2 foreign keys per table, a few enums and views), so the
// figures compare with the ones in the issue. Deterministic: the same size gives the same text.
//
// `mixed` adds what applications declare beside tables (issue 8), in proportions of a Rails or GitLab
// structure.sql: a trigger function and a BEFORE UPDATE trigger on every 5th table, a SQL function reading
// every 20th table with a view calling it, a domain, and a range-partitioned table with four partitions and
// an index on its parent per 50 tables (the partitions count among the N tables).

const ENUMS = 4;
const VIEWS_PER_THOUSAND = 10;

export interface GenerateOptions {
  /** The small change: one more column and one more index on the first table. */
  readonly change?: boolean;
  /** Functions, triggers, views over functions, a domain and partitioned tables beside the tables. */
  readonly mixed?: boolean;
}

const TRIGGER_EVERY = 5;
const FUNCTION_EVERY = 20;
const PARTITIONED_EVERY = 50;
const PARTITIONS = 4;

export function generatedSchema(tables: number, options: GenerateOptions = {}): string {
  const out: string[] = [];
  for (let e = 0; e < ENUMS; e++)
    out.push(`CREATE TYPE status_${e} AS ENUM ('new', 'active', 'suspended', 'closed_${e}');`);
  // Each partitioned table holds PARTITIONS + 1 of the N tables.
  const partitioned = options.mixed === true ? Math.max(1, Math.floor(tables / PARTITIONED_EVERY)) : 0;
  const plain = tables - partitioned * (PARTITIONS + 1);
  if (options.mixed === true) out.push(...mixedPrelude());
  for (let i = 0; i < plain; i++) {
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
    if (options.mixed === true) out.push(...mixedPerTable(i));
  }
  for (let p = 0; p < partitioned; p++) out.push(...partitionedTable(p));
  const views = Math.max(1, Math.floor((plain * VIEWS_PER_THOUSAND) / 1000));
  for (let v = 0; v < views; v++) {
    const t = Math.floor((v * plain) / views);
    out.push(
      `CREATE VIEW v${v} AS SELECT id, code, name, amount FROM t${t} WHERE status = 'active' AND amount > 0;`,
    );
  }
  return out.join('\n') + '\n';
}

/** The objects the tables of a mixed schema share: a trigger function and a domain. */
function mixedPrelude(): string[] {
  return [
    `CREATE DOMAIN positive_amount AS numeric(12,2) CHECK (VALUE >= 0);`,
    // One line: the benchmark loads a large schema in slices cut at ";\n".
    `CREATE FUNCTION touch_updated_at() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.updated_at := now(); RETURN NEW; END $$;`,
  ];
}

/** Table i's trigger, and for every FUNCTION_EVERY-th table a function reading it and a view calling that. */
function mixedPerTable(i: number): string[] {
  const out: string[] = [];
  if (i % TRIGGER_EVERY === 0)
    out.push(
      `CREATE TRIGGER t${i}_touch BEFORE UPDATE ON t${i} FOR EACH ROW EXECUTE FUNCTION touch_updated_at();`,
    );
  if (i % FUNCTION_EVERY === 0) {
    out.push(
      `CREATE FUNCTION t${i}_amount(p_id bigint) RETURNS numeric LANGUAGE sql STABLE AS $$ SELECT amount FROM t${i} WHERE id = p_id $$;`,
    );
    out.push(`CREATE VIEW t${i}_amounts AS SELECT id, t${i}_amount(id) AS amount FROM t${i};`);
  }
  return out;
}

/** A table partitioned by month and its partitions (which take the parent's key when attached), an index on
 * the parent with each partition's attached to it, as pg_dump writes them. */
function partitionedTable(p: number): string[] {
  const out = [
    `CREATE TABLE events_${p} (
  id bigint NOT NULL,
  happened_at timestamptz NOT NULL,
  kind text NOT NULL,
  amount positive_amount,
  payload jsonb,
  CONSTRAINT events_${p}_pkey PRIMARY KEY (id, happened_at)
) PARTITION BY RANGE (happened_at);`,
  ];
  for (let m = 0; m < PARTITIONS; m++) {
    const month = (k: number) => `2026-${String(k + 1).padStart(2, '0')}-01 00:00:00+00`;
    out.push(`CREATE TABLE events_${p}_m${m} (
  id bigint NOT NULL,
  happened_at timestamptz NOT NULL,
  kind text NOT NULL,
  amount positive_amount,
  payload jsonb
);`);
    out.push(
      `ALTER TABLE ONLY events_${p} ATTACH PARTITION events_${p}_m${m} FOR VALUES FROM ('${month(m)}') TO ('${month(m + 1)}');`,
    );
  }
  // pg_dump's order: the partitions attached, then the parent's index and each partition's attached to it.
  out.push(`CREATE INDEX events_${p}_kind_idx ON ONLY events_${p} (kind);`);
  for (let m = 0; m < PARTITIONS; m++) {
    out.push(`CREATE INDEX events_${p}_m${m}_kind_idx ON events_${p}_m${m} (kind);`);
    out.push(`ALTER INDEX events_${p}_kind_idx ATTACH PARTITION events_${p}_m${m}_kind_idx;`);
  }
  return out;
}
