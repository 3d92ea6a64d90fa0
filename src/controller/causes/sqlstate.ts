/**
 * Names for SQLSTATE codes: the class (the first two characters, as the SQL standard and PostgreSQL's
 * error-code table define them) and, for the conditions people meet when pointing an operator at a
 * database, the condition itself. MySQL error numbers the same way. Only codes are ever looked up, so a
 * message built from these carries nothing the server said.
 */

const CLASSES: Readonly<Record<string, string>> = {
  '00': 'successful completion',
  '01': 'warning',
  '02': 'no data',
  '03': 'SQL statement not yet complete',
  '08': 'connection exception',
  '09': 'triggered action exception',
  '0A': 'feature not supported',
  '0B': 'invalid transaction initiation',
  '0F': 'locator exception',
  '0L': 'invalid grantor',
  '0P': 'invalid role specification',
  '0Z': 'diagnostics exception',
  '20': 'case not found',
  '21': 'cardinality violation',
  '22': 'data exception',
  '23': 'integrity constraint violation',
  '24': 'invalid cursor state',
  '25': 'invalid transaction state',
  '26': 'invalid SQL statement name',
  '27': 'triggered data change violation',
  '28': 'invalid authorization specification',
  '2B': 'dependent privilege descriptors still exist',
  '2D': 'invalid transaction termination',
  '2F': 'SQL routine exception',
  '34': 'invalid cursor name',
  '38': 'external routine exception',
  '39': 'external routine invocation exception',
  '3B': 'savepoint exception',
  '3D': 'invalid catalog name',
  '3F': 'invalid schema name',
  '40': 'transaction rollback',
  '42': 'syntax error or access rule violation',
  '44': 'WITH CHECK OPTION violation',
  '53': 'insufficient resources',
  '54': 'program limit exceeded',
  '55': 'object not in prerequisite state',
  '57': 'operator intervention',
  '58': 'system error',
  F0: 'configuration file error',
  HV: 'foreign data wrapper error',
  HY: 'general error',
  P0: 'PL/pgSQL error',
  XX: 'internal error',
};

const CONDITIONS: Readonly<Record<string, string>> = {
  '08001': 'sqlclient unable to establish sqlconnection',
  '08004': 'sqlserver rejected establishment of sqlconnection',
  '08006': 'connection failure',
  '28000': 'invalid authorization specification',
  '28P01': 'invalid password',
  '3D000': 'invalid catalog name',
  '3F000': 'invalid schema name',
  '40001': 'serialization failure',
  '40P01': 'deadlock detected',
  '42501': 'insufficient privilege',
  '42601': 'syntax error',
  '42P01': 'undefined table',
  '53300': 'too many connections',
  '55P03': 'lock not available',
  '57014': 'query canceled',
  '57P01': 'admin shutdown',
  '57P03': 'cannot connect now',
};

/** "(invalid password; class 28: invalid authorization specification)" and the like. */
export function sqlstateDescription(sqlstate: string): string {
  const klass = sqlstate.slice(0, 2);
  const className = CLASSES[klass] ?? 'unknown class';
  const condition = CONDITIONS[sqlstate];
  return `(${condition !== undefined && condition !== className ? `${condition}; ` : ''}class ${klass}: ${className})`;
}

const MYSQL_ERRORS: Readonly<Record<number, string>> = {
  1040: 'ER_CON_COUNT_ERROR',
  1044: 'ER_DBACCESS_DENIED_ERROR',
  1045: 'ER_ACCESS_DENIED_ERROR',
  1049: 'ER_BAD_DB_ERROR',
  1142: 'ER_TABLEACCESS_DENIED_ERROR',
  1143: 'ER_COLUMNACCESS_DENIED_ERROR',
  1205: 'ER_LOCK_WAIT_TIMEOUT',
  1213: 'ER_LOCK_DEADLOCK',
  1227: 'ER_SPECIFIC_ACCESS_DENIED_ERROR',
  1698: 'ER_ACCESS_DENIED_NO_PASSWORD_ERROR',
  3159: 'ER_SECURE_TRANSPORT_REQUIRED',
};

export function mysqlErrorName(errno: number): string | undefined {
  return MYSQL_ERRORS[errno];
}
