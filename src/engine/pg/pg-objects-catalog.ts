/**
 * The catalog side of PostgreSQL's defined objects: one query returns each function, procedure, trigger,
 * domain, collation, text search configuration, policy and table row-level security setting as the DDL that declares it (PostgreSQL's own
 * deparsers where it has them), and the COMMENT ON for it. The inspector feeds that DDL to the same loader
 * as the desired files.
 */
const USER_SCHEMA = `n.nspname NOT IN ('pg_catalog', 'information_schema') AND left(n.nspname, 3) <> 'pg_'`;
const NOT_EXTENSION_MEMBER = (cls: string, oid: string) =>
  `NOT EXISTS (SELECT 1 FROM pg_depend dx WHERE dx.classid = '${cls}'::regclass AND dx.objid = ${oid} AND dx.deptype = 'e')`;
const comment = (target: string, oid: string, catalog: string) =>
  `CASE WHEN obj_description(${oid}, '${catalog}') IS NOT NULL THEN 'COMMENT ON ' || ${target} || ' IS ' || quote_literal(obj_description(${oid}, '${catalog}')) || ';' END`;

/** An aggregate the model manages: a plain one (ordered-set, moving and sort-operator ones stay unmanaged). */
export const PLAIN_AGGREGATE = `a.aggkind = 'n' AND a.aggsortop = 0 AND a.aggmtransfn = 0`;

/**
 * The objects the model does not manage that use a function (an operator, cast, event trigger, operator
 * class, rule, base type, an ordered-set aggregate, ...), as pg_describe_object names them: dropping the
 * function would fail (or take them with it), so it is kept while they use it.
 */
const HELD_BY = `(SELECT string_agg(DISTINCT pg_describe_object(d.classid, d.objid, d.objsubid), ', ')
  FROM pg_depend d WHERE d.refclassid = 'pg_proc'::regclass AND d.refobjid = p.oid AND d.deptype = 'n'
  AND (d.classid IN ('pg_operator'::regclass, 'pg_cast'::regclass, 'pg_event_trigger'::regclass,
      'pg_amproc'::regclass, 'pg_amop'::regclass, 'pg_opclass'::regclass, 'pg_opfamily'::regclass,
      'pg_language'::regclass, 'pg_foreign_data_wrapper'::regclass, 'pg_ts_parser'::regclass,
      'pg_ts_template'::regclass, 'pg_conversion'::regclass, 'pg_transform'::regclass)
    OR (d.classid = 'pg_proc'::regclass AND EXISTS (SELECT 1 FROM pg_aggregate a WHERE a.aggfnoid = d.objid AND NOT (${PLAIN_AGGREGATE})))
    OR (d.classid = 'pg_type'::regclass AND EXISTS (SELECT 1 FROM pg_type t WHERE t.oid = d.objid AND t.typtype = 'b'))
    OR (d.classid = 'pg_rewrite'::regclass AND EXISTS (SELECT 1 FROM pg_rewrite r WHERE r.oid = d.objid AND r.rulename <> '_RETURN'))))`;

/**
 * Columns: kind, schema, tbl (the table a trigger, policy or row-level security belongs to, else NULL),
 * name, def (statements, each ending in `;`), comment_sql, held_by (a function's unmanaged users, see HELD_BY). Triggers cloned onto partitions from their
 * parent's (tgparentid) are the parent's, as pg_dump has them.
 */
export const Q_OBJECTS = `SELECT CASE p.prokind WHEN 'p' THEN 'procedure' ELSE 'function' END AS kind, n.nspname AS schema,
  NULL::name AS tbl, p.proname::text AS name, pg_get_functiondef(p.oid) || ';' AS def,
  ${comment(`CASE p.prokind WHEN 'p' THEN 'PROCEDURE ' ELSE 'FUNCTION ' END || quote_ident(n.nspname) || '.' || quote_ident(p.proname) || '(' || pg_get_function_identity_arguments(p.oid) || ')'`, 'p.oid', 'pg_proc')} AS comment_sql,
  ${HELD_BY} AS held_by
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE p.prokind IN ('f', 'p', 'w') AND ${USER_SCHEMA} AND ${NOT_EXTENSION_MEMBER('pg_proc', 'p.oid')}
  -- A range type's constructors are part of the type (an internal dependency), created and dropped with it.
  AND NOT EXISTS (SELECT 1 FROM pg_depend di WHERE di.classid = 'pg_proc'::regclass AND di.objid = p.oid AND di.deptype = 'i')
UNION ALL
SELECT 'aggregate', n.nspname, NULL, p.proname::text,
  format('CREATE AGGREGATE %I.%I(%s) (SFUNC = %s, STYPE = %s', n.nspname, p.proname,
    pg_get_function_identity_arguments(p.oid), a.aggtransfn::regproc, format_type(a.aggtranstype, NULL))
  || CASE WHEN a.aggfinalfn <> 0 THEN ', FINALFUNC = ' || a.aggfinalfn::regproc ELSE '' END
  || CASE WHEN a.aggfinalextra THEN ', FINALFUNC_EXTRA' ELSE '' END
  || CASE WHEN a.aggcombinefn <> 0 THEN ', COMBINEFUNC = ' || a.aggcombinefn::regproc ELSE '' END
  || CASE WHEN a.aggserialfn <> 0 THEN ', SERIALFUNC = ' || a.aggserialfn::regproc ELSE '' END
  || CASE WHEN a.aggdeserialfn <> 0 THEN ', DESERIALFUNC = ' || a.aggdeserialfn::regproc ELSE '' END
  || CASE WHEN a.agginitval IS NOT NULL THEN ', INITCOND = ' || quote_literal(a.agginitval) ELSE '' END
  || CASE WHEN a.aggtransspace <> 0 THEN ', SSPACE = ' || a.aggtransspace ELSE '' END
  || CASE a.aggfinalmodify WHEN 's' THEN ', FINALFUNC_MODIFY = SHAREABLE' WHEN 'w' THEN ', FINALFUNC_MODIFY = READ_WRITE' ELSE '' END
  || CASE p.proparallel WHEN 's' THEN ', PARALLEL = SAFE' WHEN 'r' THEN ', PARALLEL = RESTRICTED' ELSE '' END
  || ');',
  ${comment(`'AGGREGATE ' || quote_ident(n.nspname) || '.' || quote_ident(p.proname) || '(' || pg_get_function_identity_arguments(p.oid) || ')'`, 'p.oid', 'pg_proc')},
  NULL
FROM pg_proc p JOIN pg_aggregate a ON a.aggfnoid = p.oid JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE ${PLAIN_AGGREGATE} AND ${USER_SCHEMA} AND ${NOT_EXTENSION_MEMBER('pg_proc', 'p.oid')}
UNION ALL
SELECT 'cluster', n.nspname, c.relname, i.relname::text,
  format('ALTER TABLE ONLY %I.%I CLUSTER ON %I;', n.nspname, c.relname, i.relname), NULL, NULL
FROM pg_index x JOIN pg_class c ON c.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE x.indisclustered AND c.relkind = 'r' AND NOT c.relispartition AND ${USER_SCHEMA}
  AND ${NOT_EXTENSION_MEMBER('pg_class', 'c.oid')}
UNION ALL
-- attstattarget is -1 by default up to PostgreSQL 16 and NULL from 17.
SELECT 'column statistics', n.nspname, c.relname, a.attname::text,
  format('ALTER TABLE ONLY %I.%I ALTER COLUMN %I SET STATISTICS %s;', n.nspname, c.relname, a.attname, a.attstattarget),
  NULL, NULL
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE a.attnum > 0 AND NOT a.attisdropped AND a.attstattarget IS NOT NULL AND a.attstattarget <> -1
  AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND ${USER_SCHEMA}
  AND ${NOT_EXTENSION_MEMBER('pg_class', 'c.oid')}
UNION ALL
SELECT 'composite type', n.nspname, NULL, t.typname::text,
  format('CREATE TYPE %I.%I AS (', n.nspname, t.typname)
  || coalesce((SELECT string_agg(format('%I %s', a.attname, format_type(a.atttypid, a.atttypmod))
       || CASE WHEN a.attcollation <> at.typcollation
            THEN ' COLLATE ' || quote_ident(cn.nspname) || '.' || quote_ident(co.collname) ELSE '' END,
       ', ' ORDER BY a.attnum)
     FROM pg_attribute a JOIN pg_type at ON at.oid = a.atttypid
     LEFT JOIN pg_collation co ON co.oid = a.attcollation LEFT JOIN pg_namespace cn ON cn.oid = co.collnamespace
     WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped), '')
  || ');',
  ${comment(`'TYPE ' || quote_ident(n.nspname) || '.' || quote_ident(t.typname)`, 't.oid', 'pg_type')},
  NULL
FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
JOIN pg_class c ON c.oid = t.typrelid AND c.relkind = 'c'
WHERE t.typtype = 'c' AND ${USER_SCHEMA} AND ${NOT_EXTENSION_MEMBER('pg_type', 't.oid')}
UNION ALL
SELECT 'collation', n.nspname, NULL, co.collname::text,
  format('CREATE COLLATION %I.%I (', n.nspname, co.collname)
  -- The ICU locale column is colliculocale up to PostgreSQL 16 and colllocale from 17: read by name.
  || CASE co.collprovider WHEN 'i' THEN 'provider = icu, locale = '
       || quote_literal(coalesce(to_jsonb(co) ->> 'colliculocale', to_jsonb(co) ->> 'colllocale', ''))
     ELSE 'provider = libc, lc_collate = ' || quote_literal(coalesce(co.collcollate, ''))
       || ', lc_ctype = ' || quote_literal(coalesce(co.collctype, '')) END
  || CASE WHEN co.collisdeterministic THEN '' ELSE ', deterministic = false' END
  || CASE WHEN to_jsonb(co) ->> 'collicurules' IS NOT NULL
       THEN ', rules = ' || quote_literal(to_jsonb(co) ->> 'collicurules') ELSE '' END
  || ');',
  ${comment(`'COLLATION ' || quote_ident(n.nspname) || '.' || quote_ident(co.collname)`, 'co.oid', 'pg_collation')},
  NULL
FROM pg_collation co JOIN pg_namespace n ON n.oid = co.collnamespace
WHERE ${USER_SCHEMA} AND ${NOT_EXTENSION_MEMBER('pg_collation', 'co.oid')}
UNION ALL
-- As pg_dump writes one: the parser, then one ADD MAPPING per token type, every name qualified.
SELECT 'text search configuration', n.nspname, NULL, cf.cfgname::text,
  format('CREATE TEXT SEARCH CONFIGURATION %I.%I (PARSER = %I.%I);', n.nspname, cf.cfgname, pn.nspname, pr.prsname)
  || coalesce((SELECT string_agg(format(' ALTER TEXT SEARCH CONFIGURATION %I.%I ADD MAPPING FOR %I WITH %s;',
         n.nspname, cf.cfgname, tt.alias, m.dicts), '' ORDER BY tt.alias)
       FROM (SELECT mp.maptokentype, string_agg(quote_ident(dn.nspname) || '.' || quote_ident(di.dictname), ', ' ORDER BY mp.mapseqno) AS dicts
         FROM pg_ts_config_map mp JOIN pg_ts_dict di ON di.oid = mp.mapdict JOIN pg_namespace dn ON dn.oid = di.dictnamespace
         WHERE mp.mapcfg = cf.oid GROUP BY mp.maptokentype) m
       JOIN ts_token_type(cf.cfgparser) tt ON tt.tokid = m.maptokentype), ''),
  ${comment(`'TEXT SEARCH CONFIGURATION ' || quote_ident(n.nspname) || '.' || quote_ident(cf.cfgname)`, 'cf.oid', 'pg_ts_config')},
  NULL
FROM pg_ts_config cf JOIN pg_namespace n ON n.oid = cf.cfgnamespace
JOIN pg_ts_parser pr ON pr.oid = cf.cfgparser JOIN pg_namespace pn ON pn.oid = pr.prsnamespace
WHERE ${USER_SCHEMA} AND ${NOT_EXTENSION_MEMBER('pg_ts_config', 'cf.oid')}
UNION ALL
SELECT 'trigger', n.nspname, c.relname, tg.tgname::text,
  pg_get_triggerdef(tg.oid) || ';' || CASE tg.tgenabled
    WHEN 'D' THEN format(' ALTER TABLE %I.%I DISABLE TRIGGER %I;', n.nspname, c.relname, tg.tgname)
    WHEN 'A' THEN format(' ALTER TABLE %I.%I ENABLE ALWAYS TRIGGER %I;', n.nspname, c.relname, tg.tgname)
    WHEN 'R' THEN format(' ALTER TABLE %I.%I ENABLE REPLICA TRIGGER %I;', n.nspname, c.relname, tg.tgname)
    ELSE '' END,
  ${comment(`format('TRIGGER %I ON %I.%I', tg.tgname, n.nspname, c.relname)`, 'tg.oid', 'pg_trigger')},
  NULL
FROM pg_trigger tg JOIN pg_class c ON c.oid = tg.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE NOT tg.tgisinternal AND tg.tgparentid = 0 AND ${USER_SCHEMA}
UNION ALL
SELECT 'domain', n.nspname, NULL, t.typname::text,
  format('CREATE DOMAIN %I.%I AS %s', n.nspname, t.typname, format_type(t.typbasetype, t.typtypmod))
  || CASE WHEN t.typcollation <> bt.typcollation THEN ' COLLATE ' || quote_ident(cn.nspname) || '.' || quote_ident(co.collname) ELSE '' END
  || CASE WHEN t.typdefault IS NOT NULL THEN ' DEFAULT ' || t.typdefault ELSE '' END
  || CASE WHEN t.typnotnull THEN ' NOT NULL' ELSE '' END
  || coalesce((SELECT string_agg(format(' CONSTRAINT %I %s', k.conname, pg_get_constraintdef(k.oid)), '' ORDER BY k.conname)
       FROM pg_constraint k WHERE k.contypid = t.oid AND k.contype = 'c' AND k.convalidated), '')
  || ';'
  || coalesce((SELECT string_agg(format(' ALTER DOMAIN %I.%I ADD CONSTRAINT %I %s;', n.nspname, t.typname, k.conname, pg_get_constraintdef(k.oid)), '' ORDER BY k.conname)
       FROM pg_constraint k WHERE k.contypid = t.oid AND k.contype = 'c' AND NOT k.convalidated), ''),
  ${comment(`format('DOMAIN %I.%I', n.nspname, t.typname)`, 't.oid', 'pg_type')},
  NULL
FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace JOIN pg_type bt ON bt.oid = t.typbasetype
LEFT JOIN pg_collation co ON co.oid = t.typcollation LEFT JOIN pg_namespace cn ON cn.oid = co.collnamespace
WHERE t.typtype = 'd' AND ${USER_SCHEMA} AND ${NOT_EXTENSION_MEMBER('pg_type', 't.oid')}
UNION ALL
SELECT 'policy', n.nspname, c.relname, po.polname::text,
  format('CREATE POLICY %I ON %I.%I AS %s FOR %s TO %s', po.polname, n.nspname, c.relname,
    CASE WHEN po.polpermissive THEN 'PERMISSIVE' ELSE 'RESTRICTIVE' END,
    CASE po.polcmd WHEN 'r' THEN 'SELECT' WHEN 'a' THEN 'INSERT' WHEN 'w' THEN 'UPDATE' WHEN 'd' THEN 'DELETE' ELSE 'ALL' END,
    CASE WHEN po.polroles = '{0}'::oid[] THEN 'PUBLIC'
      ELSE (SELECT string_agg(quote_ident(r.rolname), ', ' ORDER BY r.rolname) FROM pg_roles r WHERE r.oid = ANY (po.polroles)) END)
  || coalesce(' USING (' || pg_get_expr(po.polqual, po.polrelid) || ')', '')
  || coalesce(' WITH CHECK (' || pg_get_expr(po.polwithcheck, po.polrelid) || ')', '') || ';',
  ${comment(`format('POLICY %I ON %I.%I', po.polname, n.nspname, c.relname)`, 'po.oid', 'pg_policy')},
  NULL
FROM pg_policy po JOIN pg_class c ON c.oid = po.polrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE ${USER_SCHEMA}
UNION ALL
SELECT 'row security', n.nspname, c.relname, c.relname::text,
  CASE WHEN c.relrowsecurity THEN format('ALTER TABLE %I.%I ENABLE ROW LEVEL SECURITY;', n.nspname, c.relname) ELSE '' END
  || CASE WHEN c.relforcerowsecurity THEN format('ALTER TABLE %I.%I FORCE ROW LEVEL SECURITY;', n.nspname, c.relname) ELSE '' END,
  NULL,
  NULL
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE (c.relrowsecurity OR c.relforcerowsecurity) AND ${USER_SCHEMA} AND ${NOT_EXTENSION_MEMBER('pg_class', 'c.oid')}
ORDER BY 1, 2, 3, 4`;

/** What an object on a relation the engine leaves alone is listed as (it is then unmanaged too). */
export const UNMANAGED_LABEL: Readonly<Record<string, string>> = {
  trigger: 'trigger',
  policy: 'policy',
  'row security': 'row-level security',
};
